package access

import (
	"context"
	"time"

	"herald/audit"
	"herald/kernel"
)

// Service makes the access domain's changes: each validates its input (a
// *kernel.FieldError names the field), writes the change and its audit entry in one
// transaction (audit.Run), and runs its effects after the commit.
type Service struct {
	store *Store
	// loc is HERALD_TIMEZONE, where a key's last day is read.
	loc *time.Location
	// clock is the clock; nil means kernel.Now.
	clock func() time.Time
}

// NewService builds the access service on store; loc is where typed dates are read (nil:
// UTC), clock the clock (nil: kernel.Now).
func NewService(store *Store, loc *time.Location, clock func() time.Time) *Service {
	return &Service{store: store, loc: kernel.Zone(loc), clock: clock}
}

// change runs fn with a store bound to one transaction, with the audit entries fn
// records (audit.Run).
func (d *Service) change(ctx context.Context, by audit.Actor, fn func(tx *Store, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.k, by, d.store.On, fn)
}

// now is the service's clock, in UTC.
func (d *Service) now() time.Time { return kernel.Clock(d.clock).Now() }
