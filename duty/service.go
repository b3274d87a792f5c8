package duty

import (
	"context"
	"log/slog"
	"time"

	"herald/audit"
	"herald/kernel"
)

// Planner makes the duty changes, each validated, then written with its audit entries in
// one transaction (audit.Run), and builds the roster of a day.
type Planner struct {
	store *Schedule
	// loc is HERALD_TIMEZONE: the duty rule looks at the date there.
	loc *time.Location
	// clock is the clock; nil means kernel.Now.
	clock func() time.Time
	log   *slog.Logger
	// rotationUsers names the escalation policies that target a rotation.
	rotationUsers RotationUsers
}

// NewService builds the duty service on store: loc is HERALD_TIMEZONE (nil: UTC), clock the clock
// (nil: kernel.Now), log where an unconfigured day is warned of, and rotationUsers what
// names the policies that target a rotation.
func NewService(store *Schedule, loc *time.Location, clock func() time.Time, log *slog.Logger, rotationUsers RotationUsers) *Planner {
	return &Planner{store: store, loc: kernel.Zone(loc), clock: clock, log: log, rotationUsers: rotationUsers}
}

// change runs fn with a store bound to one transaction, with the audit entries fn
// records (audit.Run).
func (d *Planner) change(ctx context.Context, by audit.Actor, fn func(tx *Schedule, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.k, by, d.store.On, fn)
}

// now is the service's clock, in UTC.
func (d *Planner) now() time.Time { return kernel.Clock(d.clock).Now() }
