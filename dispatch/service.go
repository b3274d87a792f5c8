package dispatch

import (
	"context"

	"herald/audit"
	"herald/models"
)

// Where a write goes: every change the console, the API and the command line make is a
// method of Dispatcher, the same one for the same action, that validates its input,
// then runs change: the rows and their audit entries in one transaction, then the
// effects (enqueue, cache invalidation, callbacks) after the commit. Handlers and
// commands only parse input, name the Actor, and render what comes back.

// change runs fn with a store bound to one transaction and writes the audit entries fn
// recorded in it: an audit write that fails rolls the change back, and a change that
// fails writes no entry. A change that records no entry is refused. The effects fn
// registered with After run after the commit (audit.Run).
func (d *Dispatcher) change(ctx context.Context, by audit.Actor, fn func(tx *models.Store, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.DB(), by, d.store.On, fn)
}
