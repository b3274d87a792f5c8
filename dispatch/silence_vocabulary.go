package dispatch

import (
	"context"
	"errors"
	"slices"

	"herald/alert"
	"herald/channels"
	"herald/delivery"
	"herald/directory"
	"herald/kernel"
	"herald/models"
	"herald/silence"
)

// silenceVocabulary is what silences' matchers can name, read from each domain's store:
// the platforms, accounts, templates (with their display names), departments, people
// (with their names), priorities, escalation policies and API keys there are.
type silenceVocabulary struct{ store *models.Store }

// maxPeopleChoices is how many people a search for near values offers, and
// maxPeopleListed how many a picker lists before anything is typed.
const (
	maxPeopleChoices = 20
	maxPeopleListed  = 500
)

func (v silenceVocabulary) Choices(ctx context.Context, name, query string) ([]silence.Choice, error) {
	var out []silence.Choice
	switch name {
	case delivery.MatchPlatform:
		for _, p := range channels.Platforms {
			out = append(out, silence.Choice{Value: p})
		}
	case delivery.MatchPriority:
		for _, p := range delivery.Priorities {
			out = append(out, silence.Choice{Value: string(p)})
		}
	case delivery.MatchAccount:
		accounts, err := v.store.Sending().Accounts(ctx)
		for _, a := range accounts {
			out = append(out, silence.Choice{Value: a.Name, Label: a.Platform})
		}
		return out, err
	case delivery.MatchTemplate:
		list, err := v.store.Templates().Templates(ctx)
		for _, t := range list {
			out = append(out, silence.Choice{Value: t.Name, Label: t.DisplayName})
		}
		return out, err
	case delivery.MatchDepartment:
		departments, err := v.store.Directory().Departments(ctx)
		for _, d := range departments {
			out = append(out, silence.Choice{Value: d})
		}
		return out, err
	case delivery.MatchRecipient:
		limit := maxPeopleChoices
		if query == "" {
			limit = maxPeopleListed
		}
		people, err := v.store.Directory().ListRecipients(ctx, directory.RecipientFilter{Query: query, Limit: limit})
		directory.SortRecipientsByName(people) // as every picker of people lists them
		for _, p := range people {
			out = append(out, silence.Choice{Value: p.ExternalID, Label: p.Name})
		}
		return out, err
	case delivery.MatchPolicy:
		policies, err := alert.Of(v.store).Policies(ctx)
		for _, p := range policies {
			out = append(out, silence.Choice{Value: p.Name})
		}
		return out, err
	case delivery.MatchAPIKey:
		keys, err := v.store.Access().APIKeys(ctx)
		for _, k := range keys {
			out = append(out, silence.Choice{Value: k.Name})
		}
		return out, err
	}
	return out, nil
}

func (v silenceVocabulary) Known(ctx context.Context, name, value string) (bool, error) {
	if name == delivery.MatchRecipient {
		_, err := v.store.Directory().RecipientByExternalID(ctx, value)
		if errors.Is(err, kernel.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	choices, err := v.Choices(ctx, name, "")
	return slices.ContainsFunc(choices, func(c silence.Choice) bool { return c.Value == value }), err
}
