package dispatch

import (
	"context"
	"errors"
	"fmt"

	"herald/models"
)

// Where a write goes: every change the console, the API and the command line make is a
// method of Dispatcher, the same one for the same action, that validates its input,
// then runs change: the rows and their audit entries in one transaction, then the
// effects (enqueue, cache invalidation, callbacks) after the commit. Handlers and
// commands only parse input, name the Actor, and render what comes back.

// Actor types, as the audit log records them.
const (
	ActorUser   = "user"
	ActorAPIKey = "api_key"
	ActorSystem = "system"
)

// Actor is who makes a change and from where: a console user, an API key, the command
// line (a user named "cli") or Herald itself.
type Actor struct {
	// Name is what the audit log shows: a username, "apikey:<name>", "cli", or the name
	// of one of Herald's own jobs.
	Name string
	// Type is ActorUser, ActorAPIKey or ActorSystem.
	Type string
	// Person is the console user behind the change: the user themself, or the user who
	// created the API key. Empty for Herald's own jobs.
	Person string
	// APIKeyID is the key of an API change; 0 otherwise.
	APIKeyID int64
	// OwnOnly is set for an API key without the admin scope: it may read and change only
	// the batches created through it and their messages (OwnKey).
	OwnOnly bool
	// IP is the address the change came from; empty for the command line and jobs.
	IP string
}

// System is Herald itself acting as name (a scheduled job, the first start).
func System(name string) Actor { return Actor{Name: name, Type: ActorSystem} }

// Entry is an audit entry of this actor's.
func (a Actor) Entry(action, targetType, targetID string, params models.AuditParams) models.AuditEntry {
	return models.AuditEntry{Actor: a.Name, ActorType: a.Type, Action: action, TargetType: targetType,
		TargetID: targetID, IP: a.IP}.WithParams(params)
}

// Change is one write in progress: the audit entries it records and the effects that
// run once it has committed.
type Change struct {
	actor   Actor
	entries []models.AuditEntry
	after   []func()
}

// Audit records an audit entry of the change: an action code (e.g. "template.update"),
// what it changed, and named values for the action's catalog sentence.
func (c *Change) Audit(action, targetType, targetID string, params models.AuditParams) {
	c.entries = append(c.entries, c.actor.Entry(action, targetType, targetID, params))
}

// AuditDetail is Audit with free text kept beside the values (a reason typed, a
// request line), shown as it was given but for URLs' credentials and queries (the
// values too: see models.Redact).
func (c *Change) AuditDetail(action, targetType, targetID, detail string, params models.AuditParams) {
	e := c.actor.Entry(action, targetType, targetID, params)
	e.Detail = models.Redact(detail)
	c.entries = append(c.entries, e)
}

// After runs fn once the change has committed; never when it rolled back.
func (c *Change) After(fn func()) { c.after = append(c.after, fn) }

// errUnaudited refuses a change that recorded no audit entry: every write is audited.
var errUnaudited = errors.New("dispatch: a change recorded no audit entry")

// change runs fn with a store bound to one transaction and writes the audit entries fn
// recorded in it: an audit write that fails rolls the change back, and a change that
// fails writes no entry. A change that records no entry is refused. The effects fn
// registered with After run after the commit.
func (d *Dispatcher) change(ctx context.Context, by Actor, fn func(tx *models.Store, ch *Change) error) error {
	var ch *Change
	err := d.store.InTx(ctx, func(tx *models.Store) error {
		ch = &Change{actor: by} // afresh on every run of the transaction
		if err := fn(tx, ch); err != nil {
			return err
		}
		if len(ch.entries) == 0 {
			return errUnaudited
		}
		if err := tx.AuditMany(ctx, ch.entries); err != nil {
			return fmt.Errorf("dispatch: audit: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, fn := range ch.after {
		fn()
	}
	return nil
}
