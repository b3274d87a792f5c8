package access

import (
	"context"
	"time"

	"herald/audit"
	"herald/kernel"
)

// Warden makes the access domain's changes: each validates its input (a
// *kernel.FieldError names the field), writes the change and its audit entry in one
// transaction (audit.Run), and runs its effects after the commit.
type Warden struct {
	store *Credentials
	// loc is HERALD_TIMEZONE, where a key's last day is read.
	loc *time.Location
	// clock is the clock; nil means kernel.Now.
	clock func() time.Time
}

// NewService builds the access service on store; loc is where typed dates are read (nil:
// UTC), clock the clock (nil: kernel.Now).
func NewService(store *Credentials, loc *time.Location, clock func() time.Time) *Warden {
	return &Warden{store: store, loc: kernel.Zone(loc), clock: clock}
}

// change runs fn with a store bound to one transaction, with the audit entries fn
// records (audit.Run).
func (d *Warden) change(ctx context.Context, by audit.Actor, fn func(tx *Credentials, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.k, by, d.store.On, fn)
}

// now is the service's clock, in UTC.
func (d *Warden) now() time.Time { return kernel.Clock(d.clock).Now() }
