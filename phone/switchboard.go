package phone

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/channels"
	"herald/kernel"
	"herald/models"
)

// ActorVoiceCallback is the voice providers' callback as the audit log names it; the
// entry's values name the person called, who acted by keypad.
const ActorVoiceCallback = "voice-callback"

// ErrVoiceCallbackRefused is every refusal of a voice callback alike: no such account,
// not a voice account, settings Herald cannot read, a report whose signature or token
// does not match (channels.ErrForgedReport) or that does not read. Nothing is changed;
// the reason goes only to the log.
var ErrVoiceCallbackRefused = kernel.Declare(kernel.DomainError{Kind: kernel.KindForbidden, Code: "forbidden", Key: "api.callback_refused",
	Text: "phone: voice callback refused"})

// Switchboard acts on what voice providers report of the calls of alerts, and reads
// the calls back for the alert's page. The console's and the API's handlers call it
// alike.
type Switchboard struct {
	store    *models.Store
	alerts   *alert.Service
	channels *channels.Registry
	clock    func() time.Time
	log      *slog.Logger
}

// NewSwitchboard builds the calls' service on store, acting on alerts through their
// service; registry builds the voice accounts' adapters, which read the reports. now
// is the clock (nil: kernel.Now), log defaults to slog.Default().
func NewSwitchboard(store *models.Store, alerts *alert.Service, registry *channels.Registry, now func() time.Time, log *slog.Logger) *Switchboard {
	if log == nil {
		log = slog.Default()
	}
	return &Switchboard{store: store, alerts: alerts, channels: registry, clock: now, log: log}
}

// VoiceCallback reads a voice provider's callback to /callbacks/voice/<account> with the
// account's adapter and acts on each report (Report). It returns how many reports said
// something new. ErrVoiceCallbackRefused: see there.
func (s *Switchboard) VoiceCallback(ctx context.Context, by audit.Actor, account string, h http.Header, query url.Values, body []byte) (int, error) {
	reporter, acct, reason, err := s.reporterOf(ctx, account)
	if err != nil {
		return 0, err
	}
	var reports []channels.VoiceReport
	if reason == "" {
		reports, err = reporter.Reports(h, query, body)
		if err != nil {
			reason = err.Error()
		}
	}
	if reason != "" {
		s.log.Warn("voice callback refused", "account", account, "reason", reason)
		return 0, ErrVoiceCallbackRefused
	}
	n := 0
	for _, r := range reports {
		changed, err := s.Report(ctx, by, acct, r)
		if err != nil {
			return n, err
		}
		if changed {
			n++
		}
	}
	return n, nil
}

// reporterOf returns the report reader of the voice account named, or the reason there
// is none (to be refused as any other refusal is).
func (s *Switchboard) reporterOf(ctx context.Context, name string) (channels.VoiceReporter, int64, string, error) {
	acct, err := s.store.Sending().AccountByName(ctx, name)
	if errors.Is(err, kernel.ErrNotFound) {
		return nil, 0, "no such account", nil
	}
	if err != nil {
		return nil, 0, "", err
	}
	if acct.Platform != alert.VoicePlatform || acct.Unreadable {
		return nil, acct.ID, "not a readable voice account", nil
	}
	if s.channels == nil {
		return nil, acct.ID, "no adapters in this process", nil
	}
	sender, err := s.channels.Sender(acct.Channel())
	if err != nil {
		return nil, acct.ID, err.Error(), nil
	}
	reporter, ok := sender.(channels.VoiceReporter)
	if !ok {
		return nil, acct.ID, "the account's provider reports no calls", nil
	}
	return reporter, acct.ID, "", nil
}

// Report acts on one report of a call placed through the account accountID: the
// callee's outcome and keys are recorded on the call (shown on the alert's page);
// pressing 1 acknowledges the alert as the person called, via voice; no answer or busy
// on a step that advances on no answer fires the next step at once. A report that says
// nothing new (the same twice, a call Herald did not place through that account)
// changes nothing. It reports whether the report said something new.
func (s *Switchboard) Report(ctx context.Context, by audit.Actor, accountID int64, r channels.VoiceReport) (bool, error) {
	c, err := s.callOf(ctx, accountID, r)
	if errors.Is(err, kernel.ErrNotFound) {
		s.log.Info("voice report of no call of an alert ignored", "message", r.MessageID, "call", r.CallID)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if c.AccountID != accountID || !newsOf(c, r) {
		return false, nil
	}
	// The alert is acted on first: both moves are compare-and-sets of their own, so a
	// report that comes again after a failure below acts once; its record comes last.
	switch {
	case r.Outcome == channels.VoiceAnswered && len(r.Keys) > 0 && r.Keys[:1] == AckKey:
		if _, err := s.alerts.AcknowledgeAlert(ctx, by, c.AlertID, c.Person, alert.AckViaVoice, ""); err != nil &&
			!errors.Is(err, alert.ErrAlertEnded) {
			return false, err
		}
	case (r.Outcome == channels.VoiceNoAnswer || r.Outcome == channels.VoiceBusy) && c.Advance:
		if _, err := s.alerts.AdvanceOnNoAnswer(ctx, c.AlertID, c.Step, c.Round); err != nil {
			return false, err
		}
	}
	at := r.At
	if at.IsZero() {
		at = kernel.Clock(s.clock).Now()
	}
	changed := false
	err = audit.RunOn(ctx, s.store.DB(), by, s.store.On, func(tx *models.Store, ch *audit.Change) error {
		ok, err := Of(tx).RecordOutcome(ctx, c, r.Outcome, r.Keys, at.UTC())
		if err != nil {
			return err
		}
		if !ok {
			return errNothingNew
		}
		changed = true
		id := strconv.FormatInt(c.AlertID, 10)
		ch.Audit("alert.call", "alert", id, audit.Params{"id": id, "person": c.Person, "outcome": r.Outcome,
			"keys": r.Keys, "message": c.MessageID})
		return nil
	})
	if err != nil && !errors.Is(err, errNothingNew) {
		return false, fmt.Errorf("phone: report of call %s: %w", c.MessageID, err)
	}
	return changed, nil
}

// callOf finds the call a report is of: by Herald's message id, or, for a provider
// that names calls by its own id alone (Tencent), by that id among the account's.
func (s *Switchboard) callOf(ctx context.Context, accountID int64, r channels.VoiceReport) (*Call, error) {
	switch {
	case r.MessageID == "" && r.CallID == "":
		return nil, fmt.Errorf("phone: a report naming no call: %w", kernel.ErrNotFound)
	case r.MessageID == "":
		return s.callByProviderID(ctx, accountID, r.CallID)
	}
	return Of(s.store).CallByMessage(ctx, r.MessageID)
}

// callIDWait bounds how long a report naming a call by the provider's id alone waits
// for the worker to record that id: the provider answers the call request with it, and
// may report the call before the worker has written the answer down.
const callIDWait = 2 * time.Second

// callByProviderID finds a call by the provider's id, waiting up to callIDWait for
// the worker that placed it to record the id.
func (s *Switchboard) callByProviderID(ctx context.Context, accountID int64, callID string) (*Call, error) {
	deadline := time.Now().Add(callIDWait)
	for {
		c, err := Of(s.store).CallByProviderID(ctx, accountID, callID)
		if !errors.Is(err, kernel.ErrNotFound) || time.Now().After(deadline) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// errNothingNew rolls back the record of a report another copy of it recorded first.
var errNothingNew = errors.New("phone: the report says nothing new")

// newsOf says whether report r tells something new of call c: the first report of a
// call awaiting one, or the keys pressed on an answered call that had none.
func newsOf(c *Call, r channels.VoiceReport) bool {
	switch c.Outcome {
	case CallAwaiting:
		return r.Outcome != ""
	case channels.VoiceAnswered:
		return c.Keys == "" && r.Outcome == channels.VoiceAnswered && r.Keys != ""
	}
	return false
}

// AlertCalls are an alert's calls and its calls and SMS held by a limit.
type AlertCalls struct {
	Calls []Call
	Held  []Held
}

// CallsOfAlert returns the calls of an alert, oldest first, and its calls and SMS
// that wait held by a limit.
func (s *Switchboard) CallsOfAlert(ctx context.Context, alertID int64) (AlertCalls, error) {
	calls, err := Of(s.store).CallsOf(ctx, alertID)
	if err != nil {
		return AlertCalls{}, err
	}
	held, err := Of(s.store).HeldNotices(ctx, alertID)
	return AlertCalls{Calls: calls, Held: held}, err
}

// Book is the calls' domain as the step engine sees it (alert.CallBook).
type Book struct{}

// RecordCalls records, in tx, the calls a step just placed.
func (Book) RecordCalls(ctx context.Context, tx *models.Store, sc alert.StepCalls) error {
	calls := make([]Call, len(sc.Messages))
	now := kernel.Now()
	for i, m := range sc.Messages {
		calls[i] = Call{MessageID: m.ID, AlertID: sc.AlertID, AccountID: m.AccountID, Step: sc.N, Round: sc.Round,
			Advance: sc.Advance, Person: sc.Names[m.RecipientID], CreatedAt: now}
	}
	return Of(tx).AddCalls(ctx, calls)
}

// Moot tells the worker, just before it places a call, whether the call is still
// wanted: a message of an alert's call whose alert was acknowledged, resolved or
// exhausted while the worker held it (CancelCalls cancels only the calls still waiting)
// is not placed. The call is marked CallNotPlaced for that reason, a compare-and-set on
// its awaiting outcome, and the reason returned (also for a call marked so before); ""
// when the call goes ahead (also for a message that is not a call).
func (Book) Moot(ctx context.Context, store *models.Store, m *models.Message) (string, error) {
	if m.AlertID == nil || m.Platform != alert.VoicePlatform {
		return "", nil
	}
	c, err := Of(store).CallByMessage(ctx, m.ID)
	switch {
	case errors.Is(err, kernel.ErrNotFound):
		return "", nil
	case err != nil:
		return "", err
	case c.Outcome == CallNotPlaced:
		return c.Reason, nil
	case c.Outcome != CallAwaiting:
		return "", nil // placed before, and being sent again: the provider's outcome stands
	}
	a, err := alert.Of(store).AlertByID(ctx, *m.AlertID)
	if err != nil {
		return "", err
	}
	reason := map[string]string{alert.AlertAcknowledged: alert.CallCancelledAcknowledged,
		alert.AlertResolved: alert.CallCancelledResolved, alert.AlertExhausted: alert.CallCancelledExhausted}[a.State]
	if reason == "" {
		return "", nil
	}
	if _, err := Of(store).NotPlaced(ctx, c, reason, kernel.Now()); err != nil {
		return "", err
	}
	return reason, nil
}

// CancelCalls cancels, in tx, the calls of an alert not placed yet.
func (Book) CancelCalls(ctx context.Context, tx *models.Store, alertID int64, reason string, now time.Time) error {
	_, err := Of(tx).CancelCalls(ctx, alertID, reason, now.UTC().Truncate(time.Microsecond))
	return err
}
