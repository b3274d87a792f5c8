package chatgroups

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"herald/audit"
	"herald/channels"
	"herald/directory"
	"herald/duty"
	"herald/kernel"
	"herald/sending"
)

// OnDuty is the duty rule as a post's @ needs it: the roster of the day an instant
// falls on (duty.Planner).
type OnDuty interface {
	RosterOn(ctx context.Context, t time.Time) (*duty.Roster, error)
}

// Moderator makes the chat groups' changes, each validated, then written with its audit
// entry in one transaction (audit.Run), and works out whom a post @s.
type Moderator struct {
	store    *Chats
	accounts *sending.AccountBook
	staff    *directory.Staff
	duty     OnDuty
}

// NewService builds the chat groups' service on store; accounts are the sending
// accounts a group names, staff the people a post @s, onDuty the duty rule that says
// who is on duty.
func NewService(store *Chats, accounts *sending.AccountBook, staff *directory.Staff, onDuty OnDuty) *Moderator {
	return &Moderator{store: store, accounts: accounts, staff: staff, duty: onDuty}
}

// Store is the chat groups' queries.
func (m *Moderator) Store() *Chats { return m.store }

// Input is a chat group as an admin submits it, through the console form or the API.
type Input struct {
	Name    string
	Account string
	ChatID  string
	// Mention "" is MentionNone.
	Mention string
	// Fold nil is on.
	Fold *bool
	Note string
}

// groupOf validates in into a group: its account must exist and post to groups. A
// failure is a *kernel.FieldError naming the field.
func (m *Moderator) groupOf(ctx context.Context, in Input) (*ChatGroup, error) {
	g := &ChatGroup{Name: strings.TrimSpace(in.Name), Account: strings.TrimSpace(in.Account), ChatID: strings.TrimSpace(in.ChatID),
		Mention: strings.TrimSpace(in.Mention), Fold: in.Fold == nil || *in.Fold, Note: strings.TrimSpace(in.Note)}
	if g.Mention == "" {
		g.Mention = MentionNone
	}
	if g.Account == "" {
		return nil, kernel.Invalid("account", "chatgroups.error.account_required")
	}
	a, err := m.accounts.AccountByName(ctx, g.Account)
	if errors.Is(err, kernel.ErrNotFound) {
		return nil, kernel.Invalid("account", "chatgroups.error.account_unknown", "Name", g.Account)
	}
	if err != nil {
		return nil, err
	}
	g.AccountID, g.Platform = a.ID, a.Platform
	if channels.IsRobot(g.Platform) {
		g.ChatID = "" // a robot posts to its own group
	}
	if err := validate(g); err != nil {
		return nil, err
	}
	return g, nil
}

// Group reads one chat group; kernel.ErrNotFound when there is none.
func (m *Moderator) Group(ctx context.Context, name string) (*ChatGroup, error) {
	return m.store.GroupByName(ctx, name)
}

// Groups lists the chat groups by name.
func (m *Moderator) Groups(ctx context.Context, f Filter) ([]ChatGroup, error) {
	return m.store.Groups(ctx, f)
}

// Create validates and stores a new chat group, audited as done by by.
func (m *Moderator) Create(ctx context.Context, by audit.Actor, in Input) (*ChatGroup, error) {
	g, err := m.groupOf(ctx, in)
	if err != nil {
		return nil, err
	}
	err = audit.RunOn(ctx, m.store.k, by, m.store.On, func(tx *Chats, ch *audit.Change) error {
		if err := tx.Insert(ctx, g); err != nil {
			return err
		}
		ch.Audit("chat_group.create", "chat_group", g.Name, params(g))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Update saves the group old as the caller read it with the input's values (a
// compare-and-set on the version read: kernel.ErrStateChanged if it changed since),
// audited as done by by with what changed.
func (m *Moderator) Update(ctx context.Context, by audit.Actor, old *ChatGroup, in Input) (*ChatGroup, error) {
	g, err := m.groupOf(ctx, in)
	if err != nil {
		return nil, err
	}
	g.ID, g.CreatedAt = old.ID, old.CreatedAt
	err = audit.RunOn(ctx, m.store.k, by, m.store.On, func(tx *Chats, ch *audit.Change) error {
		if err := tx.Update(ctx, g, old.Version); err != nil {
			return err
		}
		p := params(g)
		p["name"] = old.Name
		if old.Name != g.Name {
			p["new_name"] = g.Name
		}
		p["changed"] = changed(old, g)
		ch.Audit("chat_group.update", "chat_group", old.Name, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Delete removes the group g as the caller read it, audited as done by by. Posts made
// to it stay, naming it by id.
func (m *Moderator) Delete(ctx context.Context, by audit.Actor, g *ChatGroup) error {
	return audit.RunOn(ctx, m.store.k, by, m.store.On, func(tx *Chats, ch *audit.Change) error {
		if err := tx.Delete(ctx, g); err != nil {
			return err
		}
		ch.Audit("chat_group.delete", "chat_group", g.Name, audit.Params{"name": g.Name, "account": g.Account})
		return nil
	})
}

// params are a group's values for its audit entry.
func params(g *ChatGroup) audit.Params {
	return audit.Params{"name": g.Name, "account": g.Account, "chat_id": g.ChatID, "mention": g.Mention,
		"fold": strconv.FormatBool(g.Fold)}
}

// changed names, for the audit log, the fields an update changed.
func changed(old, g *ChatGroup) string {
	var out []string
	add := func(field, o, n string) {
		if o != n {
			out = append(out, fmt.Sprintf("%s %s → %s", field, orNone(o), orNone(n)))
		}
	}
	add("name", old.Name, g.Name)
	add("account", old.Account, g.Account)
	add("chat_id", old.ChatID, g.ChatID)
	add("mention", old.Mention, g.Mention)
	add("fold", strconv.FormatBool(old.Fold), strconv.FormatBool(g.Fold))
	add("note", old.Note, g.Note)
	return strings.Join(out, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
