package directory

import (
	"context"

	"herald/audit"
)

// Clerk makes the directory's changes, each validated, then written with its audit
// entries in one transaction (audit.Run).
type Clerk struct {
	store *Staff
}

// NewService builds the directory's service on store.
func NewService(store *Staff) *Clerk { return &Clerk{store: store} }

// change runs fn with a store bound to one transaction, with the audit entries fn
// records (audit.Run).
func (d *Clerk) change(ctx context.Context, by audit.Actor, fn func(tx *Staff, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.k, by, d.store.On, fn)
}
