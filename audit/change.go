package audit

import (
	"context"
	"errors"
	"fmt"

	"herald/kernel"
)

// Change is one write in progress: the audit entries it records and the effects that
// run once it has committed.
type Change struct {
	actor   Actor
	entries []Entry
	after   []func()
}

// Audit records an audit entry of the change: an action code (e.g. "template.update"),
// what it changed, and named values for the action's catalog sentence.
func (c *Change) Audit(action, targetType, targetID string, params Params) {
	c.entries = append(c.entries, c.actor.Entry(action, targetType, targetID, params))
}

// AuditDetail is Audit with free text kept beside the values (a reason typed, a
// request line), shown as it was given but for URLs' credentials and queries (the
// values too: see Redact).
func (c *Change) AuditDetail(action, targetType, targetID, detail string, params Params) {
	e := c.actor.Entry(action, targetType, targetID, params)
	e.Detail = Redact(detail)
	c.entries = append(c.entries, e)
}

// After runs fn once the change has committed; never when it rolled back.
func (c *Change) After(fn func()) { c.after = append(c.after, fn) }

// errUnaudited refuses a change that recorded no audit entry: every write is audited.
var errUnaudited = errors.New("audit: a change recorded no audit entry")

// RunOn is Run with the transaction handed to fn as a domain's store bound to it: bind
// is the store's On.
func RunOn[S any](ctx context.Context, db *kernel.DB, by Actor, bind func(tx *kernel.DB) S, fn func(tx S, ch *Change) error) error {
	return Run(ctx, db, by, func(tx *kernel.DB, ch *Change) error { return fn(bind(tx), ch) })
}

// Run runs fn on db bound to one transaction and writes the audit entries fn recorded
// in it: an audit write that fails rolls the change back, and a change that fails
// writes no entry. A change that records no entry is refused. The effects fn registered
// with After run after the commit.
func Run(ctx context.Context, db *kernel.DB, by Actor, fn func(tx *kernel.DB, ch *Change) error) error {
	var ch *Change
	err := db.InTx(ctx, func(tx *kernel.DB) error {
		ch = &Change{actor: by} // afresh on every run of the transaction
		if err := fn(tx, ch); err != nil {
			return err
		}
		if len(ch.entries) == 0 {
			return errUnaudited
		}
		if err := NewLog(tx).WriteMany(ctx, ch.entries); err != nil {
			return fmt.Errorf("audit: audit: %w", err)
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
