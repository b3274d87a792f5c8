package chatgroups

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"herald/channels"
	"herald/directory"
	"herald/duty"
	"herald/kernel"
)

// MentionOf is what a post on platform @s p by; ok is false when the platform cannot
// @ them (no user id there, and no mobile number where the platform @s by one).
func MentionOf(platform string, p *directory.Recipient) (channels.Mention, bool) {
	field, byMobile, known := channels.MentionBy(platform)
	if !known {
		return channels.Mention{}, false
	}
	m := channels.Mention{Name: p.Name, ExternalID: p.ExternalID}
	for _, a := range directory.IMAddresses {
		if a.Field == field {
			m.UserID = *a.Of(p)
		}
	}
	if byMobile {
		m.Mobile = p.Mobile
	}
	return m, m.UserID != "" || m.Mobile != ""
}

// Post is one message a send makes to a chat group: the group, the people it @s, and
// what its warning line says.
type Post struct {
	Group    ChatGroup
	Mentions []channels.Mention
	// Unmentionable names the people on duty the platform cannot @ (no user id there,
	// no mobile number where it @s by one): the post names them instead of leaving them
	// out silently.
	Unmentionable []string
	// NobodyOnDuty says the post was to @ whoever is on duty and nobody is that day;
	// DayOff that the day is a holiday.
	NobodyOnDuty bool
	DayOff       bool
	// HolidayName is the day off's name (国庆节), when DayOff.
	HolidayName string
}

// Posts works out a send's posts to the named groups on the day at falls on. mention
// nil takes each group's own setting; otherwise its entries are "on_duty", "none" or
// staff external ids, for every group named. An unknown group is a *kernel.FieldError
// naming groups[i]; a mention of someone unknown, inactive or whom a group's platform
// cannot @ names mention[i].
func (m *Moderator) Posts(ctx context.Context, names []string, mention []string, day time.Time) ([]Post, error) {
	groups, err := m.store.GroupsByNames(ctx, names)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]ChatGroup, len(groups))
	for _, g := range groups {
		byName[g.Name] = g
	}
	var people map[string]directory.Recipient
	if ids := externalIDs(mention); len(ids) > 0 {
		if people, err = m.named(ctx, ids); err != nil {
			return nil, err
		}
	}
	var roster *duty.Roster
	var onDuty []directory.Recipient
	seen := map[string]bool{}
	out := make([]Post, 0, len(names))
	for i, name := range names {
		g, ok := byName[strings.TrimSpace(name)]
		if !ok || g.Account == "" {
			return nil, kernel.Invalid(fmt.Sprintf("groups[%d]", i), "chatgroups.error.group_unknown", "Name", name)
		}
		if seen[g.Name] {
			continue
		}
		seen[g.Name] = true
		spec := mention
		if spec == nil {
			spec = []string{g.Mention}
		}
		p := Post{Group: g}
		mentioned := map[int64]bool{}
		for k, entry := range spec {
			switch entry = strings.TrimSpace(entry); entry {
			case MentionNone, "":
			case MentionOnDuty:
				if roster == nil {
					if roster, err = m.duty.RosterOn(ctx, day); err != nil {
						return nil, err
					}
					if onDuty, err = m.onDuty(ctx, roster); err != nil {
						return nil, err
					}
				}
				p.NobodyOnDuty, p.DayOff = roster.Empty(), roster.DayOff()
				if roster.Holiday != nil {
					p.HolidayName = roster.Holiday.Name
				}
				for _, person := range onDuty {
					if mentioned[person.ID] {
						continue
					}
					mentioned[person.ID] = true
					if mt, ok := MentionOf(g.Platform, &person); ok {
						p.Mentions = append(p.Mentions, mt)
					} else {
						p.Unmentionable = append(p.Unmentionable, who(&person))
					}
				}
			default:
				field := fmt.Sprintf("mention[%d]", k)
				person, known := people[entry]
				switch {
				case !known:
					return nil, kernel.Invalid(field, "chatgroups.error.mention_unknown", "ID", entry)
				case !person.Active:
					return nil, kernel.Invalid(field, "chatgroups.error.mention_inactive", "Who", who(&person))
				}
				mt, ok := MentionOf(g.Platform, &person)
				if !ok {
					return nil, kernel.Invalid(field, "chatgroups.error.mention_no_id", "Who", who(&person), "Group", g.Name, "Platform", g.Platform)
				}
				if !mentioned[person.ID] {
					mentioned[person.ID] = true
					p.Mentions = append(p.Mentions, mt)
				}
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// externalIDs are the staff ids among a send's mention entries.
func externalIDs(mention []string) []string {
	var out []string
	for _, e := range mention {
		if e = strings.TrimSpace(e); e != "" && e != MentionOnDuty && e != MentionNone && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// named reads the people a send @s by external id.
func (m *Moderator) named(ctx context.Context, ids []string) (map[string]directory.Recipient, error) {
	list, err := m.staff.CachedRecipientsByExternalIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]directory.Recipient, len(list))
	for _, p := range list {
		out[p.ExternalID] = p
	}
	return out, nil
}

// onDuty reads the active people on a roster, by external id.
func (m *Moderator) onDuty(ctx context.Context, roster *duty.Roster) ([]directory.Recipient, error) {
	ids := make([]int64, 0, len(roster.OnDuty))
	for id := range roster.OnDuty {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	list, err := m.staff.RecipientsByIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	list = slices.DeleteFunc(list, func(p directory.Recipient) bool { return !p.Active })
	slices.SortFunc(list, func(a, b directory.Recipient) int { return strings.Compare(a.ExternalID, b.ExternalID) })
	return list, nil
}

// who names a person in a post or an error: name and external id.
func who(p *directory.Recipient) string {
	if p.Name == "" {
		return p.ExternalID
	}
	return p.Name + " (" + p.ExternalID + ")"
}
