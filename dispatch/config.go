package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"herald/access"
	"herald/alert"
	"herald/channels"
	"herald/directory"
	"herald/duty"
	"herald/inbound"
	"herald/incident"
	"herald/message"
	"herald/models"
	"herald/phone"
	"herald/recall"
	"herald/sending"
	"herald/silence"
	"herald/tasks"
	"herald/templates"
)

// Config is what a Dispatcher is built from. Store, Enqueuer and Location are required;
// zero values of the rest take the defaults their comments give.
type Config struct {
	Store *models.Store
	// Enqueuer hands committed messages to the queue.
	Enqueuer *tasks.Enqueuer
	// Location is HERALD_TIMEZONE: the duty rule looks at the delivery date there.
	Location *time.Location

	// Log defaults to slog.Default().
	Log *slog.Logger
	// Now is the clock; models.Now when nil.
	Now func() time.Time
	// Stats counts created messages for the dashboard; nil counts nothing.
	Stats *models.Stats
	// Accounts caches account lookups; nil reads the store every time.
	Accounts *sending.AccountCache
	// Callbacks hears of messages cancelled here, so their events go out at once; nil:
	// the recovery pass finds them within seconds.
	Callbacks *tasks.Callbacks
	// Channels builds the platform adapters a recall calls; nil: nothing can be
	// recalled (recall_unsupported).
	Channels *channels.Registry
	// AckLink makes the acknowledgment link of an alert's notice to a recipient; nil:
	// notices carry no link.
	AckLink func(messageID string, recipientID int64) string
	// AckObserver hears how long each alert waited for its first acknowledgment; nil:
	// nobody.
	AckObserver func(time.Duration)
	// AckLinks signs and opens the acknowledgment links (HERALD_PUBLIC_URL,
	// HERALD_SECRET_KEY); with AckLink nil, it makes the links too. Nil: no link opens.
	AckLinks *alert.AckLinks
	// StepWait, when positive, replaces MinStepWait as the shortest wait of an
	// escalation step (HERALD_TEST_KNOBS step_wait, for tests only).
	StepWait time.Duration
	// InboundObserver hears of every event an integration received and what became of
	// it; nil: nobody.
	InboundObserver inbound.Observer
}

// NewDispatcher returns the intake and service layer built from cfg, or an error naming
// the required part cfg lacks.
func NewDispatcher(cfg Config) (*Dispatcher, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("dispatch: a dispatcher needs a store")
	case cfg.Enqueuer == nil:
		return nil, errors.New("dispatch: a dispatcher needs an enqueuer")
	case cfg.Location == nil:
		return nil, errors.New("dispatch: a dispatcher needs the time zone of the duty rule")
	}
	d := &Dispatcher{store: cfg.Store, enqueuer: cfg.Enqueuer, loc: cfg.Location, log: cfg.Log, clock: cfg.Now,
		stats: cfg.Stats, accounts: cfg.Accounts, callbacks: cfg.Callbacks, channels: cfg.Channels,
		inboundObserver: cfg.InboundObserver}
	if d.log == nil {
		d.log = slog.Default()
	}
	d.alertConfig = alert.Config{Notices: alertNotices{d}, Steps: cfg.Enqueuer, AckLink: cfg.AckLink,
		AckObserver: cfg.AckObserver, AckLinks: cfg.AckLinks, StepWait: cfg.StepWait, Calls: phone.Book{}}
	if cfg.Callbacks != nil {
		d.alertConfig.Kicker = cfg.Callbacks
	}
	buildAlerts(d)
	return d, nil
}

// buildAlerts builds the alerts' service on the dispatcher's store, clock and time zone,
// with the intake as its Notices.
func buildAlerts(d *Dispatcher) {
	cfg := d.alertConfig
	cfg.Store, cfg.Location, cfg.Now, cfg.Log = d.store, d.loc, d.clock, d.log
	cfg.Duty = d.Duty()
	cfg.Digest = func(ctx context.Context, id int64) (string, error) {
		return incident.NewService(d.store, nil, d.clock).Digest(ctx, id)
	}
	d.alerts, _ = alert.NewService(cfg)
}

// NewStoreOnly returns the service layer of a process that enqueues nothing (the command
// line, the first start): its changes follow the console's and the API's rules and are
// audited alike. loc is HERALD_TIMEZONE; nil means UTC.
func NewStoreOnly(store *models.Store, loc *time.Location) *Dispatcher {
	d := &Dispatcher{store: store, loc: loc, log: slog.Default()}
	buildAlerts(d)
	return d
}

// Access is the access domain's service: users, passwords, sessions, API keys.
func (d *Dispatcher) Access() *access.Warden {
	return access.NewService(d.store.Access(), d.loc, d.clock)
}

// Directory is the staff directory's service.
func (d *Dispatcher) Directory() *directory.Clerk { return directory.NewService(d.store.Directory()) }

// Sending is the sending accounts' service.
func (d *Dispatcher) Sending() *sending.Desk {
	return sending.NewService(d.store.Sending(), d.accounts)
}

// Duty is the duty service; the escalation policies name the rotations they target
// (alert.PolicyUsers).
func (d *Dispatcher) Duty() *duty.Planner {
	return duty.NewService(d.store.Duty(), d.loc, d.clock, d.log, alert.PolicyUsers{})
}

// Alerts is the alerts' service: policies, escalation, acknowledgments.
func (d *Dispatcher) Alerts() *alert.Service { return d.alerts }

// Recalls is the recall service.
func (d *Dispatcher) Recalls() *recall.Retriever {
	cfg := recall.Config{Store: d.store, Messages: recallMessages{d.Messages(), d}, Alerts: d.alerts, Channels: d.channels, Now: d.clock, Log: d.log}
	if d.callbacks != nil {
		cfg.Kicker = d.callbacks
	}
	return recall.NewService(cfg)
}

// recallMessages is the messages' service and the approval threshold, as a recall sees
// them (recall.Messages).
type recallMessages struct {
	*message.Operator
	d *Dispatcher
}

func (m recallMessages) ApprovalThreshold(ctx context.Context) (int, error) {
	return m.d.approvalThreshold(ctx)
}

// Messages is the messages' service: reading a batch or a message as a caller may see
// it, cancelling, retrying and re-sending.
func (d *Dispatcher) Messages() *message.Operator {
	var kicker alert.Kicker
	if d.callbacks != nil {
		kicker = d.callbacks
	}
	return message.NewService(d.store, retryQueue{d}, kicker, d.stats)
}

// retryQueue enqueues the messages the messages' service made due again.
type retryQueue struct{ d *Dispatcher }

func (q retryQueue) Retried(ctx context.Context, msgs []models.Message) {
	now := q.d.now()
	jobs := make([]tasks.Job, len(msgs))
	for i, m := range msgs {
		jobs[i] = tasks.Single(m.ID, m.Priority, now, "")
	}
	q.d.enqueue(ctx, jobs)
}

// Templates is the templates' service; saving a version settles the template's waiting
// messages here (templateWaiting).
func (d *Dispatcher) Templates() *templates.Editor {
	return templates.NewService(d.store.Templates(), templateWaiting{d}, d.clock)
}

// Inbound is the integrations' service: the monitoring tools that post alerts, and
// what their events become.
func (d *Dispatcher) Inbound() *inbound.Gateway {
	return inbound.NewService(inbound.Config{Store: d.store, Platforms: channels.Platforms, Opener: inboundOpener{d},
		Alerts: d.alerts, Incidents: incident.NewService(d.store, d.alerts, d.clock), Inhibitor: Inhibition(d), Now: d.clock, Observe: d.inboundObserver, Location: d.loc, Log: d.log})
}

// Silences is the silences' service.
func (d *Dispatcher) Silences() *silence.Keeper {
	return silence.NewService(silence.Of(d.store), d.clock, silenceVocabulary{d.store}, d.loc)
}
