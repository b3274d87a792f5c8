package silence

import (
	"context"
	"time"

	"herald/audit"
	"herald/kernel"
)

// Keeper makes the silences' changes, each validated, then written with its audit
// entries in one transaction (audit.Run).
type Keeper struct {
	store *Holds
	// clock is the clock; nil means kernel.Now.
	clock func() time.Time
	// vocabulary knows what matchers' values can name (nil: any value is taken).
	vocabulary Vocabulary
	// loc is the time zone of a recurring silence that names none.
	loc *time.Location
}

// NewService builds the silences' service on store; clock is the clock (nil:
// kernel.Now); vocabulary knows what matchers' values can name; loc is the time zone of
// a recurring silence that names none (nil: UTC).
func NewService(store *Holds, clock func() time.Time, vocabulary Vocabulary, loc *time.Location) *Keeper {
	if loc == nil {
		loc = time.UTC
	}
	return &Keeper{store: store, clock: clock, vocabulary: vocabulary, loc: loc}
}

// Choices lists the values a matcher of name can take for a picker (Vocabulary's
// Choices); none without a vocabulary.
func (d *Keeper) Choices(ctx context.Context, name, query string) ([]Choice, error) {
	if d.vocabulary == nil {
		return nil, nil
	}
	return d.vocabulary.Choices(ctx, name, query)
}

// change runs fn with a store bound to one transaction, with the audit entries fn
// records (audit.Run).
func (d *Keeper) change(ctx context.Context, by audit.Actor, fn func(tx *Holds, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.k, by, d.store.On, fn)
}

// now is the service's clock, in UTC.
func (d *Keeper) now() time.Time { return kernel.Clock(d.clock).Now() }
