package sending

import (
	"context"

	"herald/audit"
)

// Desk makes the sending accounts' changes, each validated, then written with its
// audit entries in one transaction (audit.Run).
type Desk struct {
	store *AccountBook
	// accounts is the intake's cache of accounts, told of each change; nil: none.
	accounts *AccountCache
}

// NewService builds the sending accounts' service on store; accounts (nil: none) is the
// cache this process reads accounts through, forgotten after each change.
func NewService(store *AccountBook, accounts *AccountCache) *Desk {
	return &Desk{store: store, accounts: accounts}
}

// change runs fn with a store bound to one transaction, with the audit entries fn
// records (audit.Run).
func (d *Desk) change(ctx context.Context, by audit.Actor, fn func(tx *AccountBook, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.k, by, d.store.On, fn)
}
