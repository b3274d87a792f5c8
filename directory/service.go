package directory

import (
	"context"

	"herald/audit"
)

// Service makes the directory's changes, each validated, then written with its audit
// entries in one transaction (audit.Run).
type Service struct {
	store *Store
}

// NewService builds the directory's service on store.
func NewService(store *Store) *Service { return &Service{store: store} }

// change runs fn with a store bound to one transaction, with the audit entries fn
// records (audit.Run).
func (d *Service) change(ctx context.Context, by audit.Actor, fn func(tx *Store, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.k, by, d.store.On, fn)
}
