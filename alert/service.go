package alert

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"herald/audit"
	"herald/duty"
	"herald/kernel"
	"herald/models"
)

// Service runs alerts: their escalation policies, the step engine, acknowledgments and
// resolutions (by link, card, API or console), and the acknowledgment page. Each change
// is validated, then written with its audit entries in one transaction (audit.Run);
// its effects (a step's task, a callback's wake-up) run after the commit.
type Service struct {
	store *models.Store
	// notices is the intake: it plans and writes the notices of steps and acknowledgments.
	notices Notices
	// steps hands a step to the queue for its due time; nil: the recovery poll fires it.
	steps StepQueue
	// kicker wakes an API key's callbacks; nil: the recovery pass finds them.
	kicker Kicker
	// duty resolves the on-duty and rotation targets of steps.
	duty *duty.Planner
	loc  *time.Location
	// clock is the clock; nil means kernel.Now.
	clock func() time.Time
	log   *slog.Logger

	ackLink     func(messageID string, recipientID int64) string
	ackObserver func(time.Duration)
	ackLinks    *AckLinks
	// minStepWait replaces MinStepWait when positive (Config.StepWait).
	minStepWait time.Duration
	// afterClaim runs after a step is claimed, inside the firing's transaction
	// (Config.AfterClaim).
	afterClaim func() error

	// calls records the calls steps place and cancels those an alert's end makes
	// pointless; nil: no step places calls (nothing records their outcomes).
	calls CallBook

	// digest lists the alerts of an incident for its notices; nil: they list none.
	digest func(ctx context.Context, incidentID int64) (string, error)

	// weComRefusals rate-limits the log line of refused WeCom callbacks.
	weComRefusals refusalLog
}

// Notices is what escalation asks of the intake: a step's or an acknowledgment's notices
// checked, resolved to their recipients under the duty rule and rendered, with nothing
// written; then written in the transaction of the step or the acknowledgment that
// needs them, and enqueued once it commits.
type Notices interface {
	PlanNotices(ctx context.Context, n Notice) (*NoticePlan, error)
	WriteNotices(ctx context.Context, tx *models.Store, ch *audit.Change, p *NoticePlan) error
	// OverThreshold says whether a batch of n people needs a second person's approval.
	OverThreshold(ctx context.Context, n int) (bool, error)
}

// Notice is one batch of an alert's notices to plan: a step's (the alert's content, with
// the acknowledgment link's placeholder) or Herald's own (taken, nobody answered).
type Notice struct {
	AccountID    int64
	RecipientIDs []int64
	// Groups name the chat groups the notice is posted to (a step's group:<name>).
	Groups        []string
	Template      string
	Variables     map[string]string
	Subject, Text string
	CallbackKeyID *int64
	// AckPlaceholder stands for the acknowledgment link while the content is rendered
	// (NewAckPlaceholder); "" for Herald's own notices.
	AckPlaceholder string
}

// NoticePlan is the intake's plan of a Notice: the batch and its messages, not written.
type NoticePlan struct {
	Batch    *models.Batch
	Messages []models.Message
	// Names maps recipient ids to external ids.
	Names map[int64]string
	// Groups maps chat group ids to the names of the groups posted to.
	Groups map[int64]string
}

// StepQueue hands an alert's step to the queue, to fire at its due time.
type StepQueue interface {
	EnqueueAlertStep(ctx context.Context, stepID int64, due time.Time) error
}

// Kicker wakes the delivery of an API key's callback events.
type Kicker interface {
	Kick(keyID int64)
}

// Config is what a Service is built from. Ledger is required; zero values of the rest
// take the defaults their comments give.
type Config struct {
	Store *models.Store
	// Notices is the intake; nil: no step or acknowledgment notifies anyone (a process
	// that enqueues nothing: the command line, the first start).
	Notices Notices
	// Steps hands steps to the queue; nil: the recovery poll fires them.
	Steps StepQueue
	// Kicker wakes callbacks at once; nil: the recovery pass finds them within seconds.
	Kicker Kicker
	// Duty resolves on-duty and rotation targets; nil: one on Ledger.
	Duty *duty.Planner
	// Location is HERALD_TIMEZONE; nil means UTC.
	Location *time.Location
	// Now is the clock; nil means kernel.Now.
	Now func() time.Time
	// Log defaults to slog.Default().
	Log *slog.Logger
	// AckLink makes the acknowledgment link of a notice to a recipient; nil: AckLinks
	// makes them, and with AckLinks nil notices carry no link.
	AckLink func(messageID string, recipientID int64) string
	// AckObserver hears how long each alert waited for its first acknowledgment; nil:
	// nobody.
	AckObserver func(time.Duration)
	// AckLinks signs and opens the acknowledgment links; nil: no link opens.
	AckLinks *AckLinks
	// StepWait, when positive, replaces MinStepWait as the shortest wait of a step
	// (HERALD_TEST_KNOBS step_wait, for tests only).
	StepWait time.Duration
	// Calls is the calls' domain (package phone); nil: calls are not recorded, so a
	// keypad's answer cannot be traced back to its step.
	Calls CallBook
	// AfterClaim, for tests only, runs after a step is claimed, inside the firing's
	// transaction: an error rolls the firing back, as a crash would.
	AfterClaim func() error
	// Digest lists the alerts of an incident (package incident) for the notices of the
	// incident's escalation; nil: they list none.
	Digest func(ctx context.Context, incidentID int64) (string, error)
}

// NewService builds the alerts' service from cfg, or an error naming the part it lacks.
func NewService(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("alert: the service needs a store")
	}
	d := &Service{store: cfg.Store, notices: cfg.Notices, steps: cfg.Steps, kicker: cfg.Kicker, duty: cfg.Duty,
		loc: kernel.Zone(cfg.Location), clock: cfg.Now, log: cfg.Log, ackLink: cfg.AckLink, ackObserver: cfg.AckObserver,
		ackLinks: cfg.AckLinks, minStepWait: cfg.StepWait, afterClaim: cfg.AfterClaim, calls: cfg.Calls, digest: cfg.Digest}
	if d.ackLink == nil && d.ackLinks != nil {
		d.ackLink = d.ackLinks.Link
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	if d.duty == nil {
		d.duty = duty.NewService(cfg.Store.Duty(), d.loc, d.clock, d.log, PolicyUsers{})
	}
	return d, nil
}

// change runs fn with a store bound to one transaction and writes the audit entries fn
// recorded in it (audit.Run).
func (d *Service) change(ctx context.Context, by audit.Actor, fn func(tx *models.Store, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.DB(), by, d.store.On, fn)
}

// now is the service's clock, in UTC.
func (d *Service) now() time.Time { return kernel.Clock(d.clock).Now() }

// kick wakes key's callbacks once ch commits.
func (d *Service) kick(ch *audit.Change, key int64) {
	if d.kicker != nil {
		ch.After(func() { d.kicker.Kick(key) })
	}
}
