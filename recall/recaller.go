package recall

import (
	"context"
	"log/slog"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/channels"
	"herald/kernel"
	"herald/models"
)

// Retriever takes back notices sent by mistake: one message, or a whole batch, for which
// a recall of more people than the approval threshold waits for a second person. Each
// change is validated, then written with its audit entries in one transaction.
type Retriever struct {
	store    *models.Store
	messages Messages
	alerts   *alert.Service
	channels *channels.Registry
	kicker   alert.Kicker
	clock    func() time.Time
	log      *slog.Logger
}

// Messages is what a recall asks of the messages' service: the batch or message a
// caller may act on, a message not sent yet cancelled in a change, and the approval
// threshold.
type Messages interface {
	Batch(ctx context.Context, by audit.Actor, id string) (*models.Batch, error)
	OwnMessage(ctx context.Context, by audit.Actor, id string) (*models.Message, error)
	CancelIn(ctx context.Context, tx *models.Store, ch *audit.Change, m *models.Message) error
	ApprovalThreshold(ctx context.Context) (int, error)
}

// Config is what a Retriever is built from. Requests, Messages and Alerts are required;
// zero values of the rest take the defaults their comments give.
type Config struct {
	Store    *models.Store
	Messages Messages
	// Alerts ends the alert a recalled message is a notice of.
	Alerts *alert.Service
	// Channels builds the platform adapters a recall calls; nil: nothing can be
	// recalled (recall_unsupported).
	Channels *channels.Registry
	// Kicker wakes callbacks at once; nil: the recovery pass finds them within seconds.
	Kicker alert.Kicker
	// Now is the clock; nil means kernel.Now.
	Now func() time.Time
	// Log defaults to slog.Default().
	Log *slog.Logger
}

// NewService builds the recall service from cfg.
func NewService(cfg Config) *Retriever {
	d := &Retriever{store: cfg.Store, messages: cfg.Messages, alerts: cfg.Alerts, channels: cfg.Channels,
		kicker: cfg.Kicker, clock: cfg.Now, log: cfg.Log}
	if d.log == nil {
		d.log = slog.Default()
	}
	return d
}

// change runs fn with a store bound to one transaction and writes the audit entries fn
// recorded in it (audit.Run).
func (d *Retriever) change(ctx context.Context, by audit.Actor, fn func(tx *models.Store, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.DB(), by, d.store.On, fn)
}

// now is the service's clock, in UTC.
func (d *Retriever) now() time.Time { return kernel.Clock(d.clock).Now() }
