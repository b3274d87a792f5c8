package dispatch

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/inbound"
	"herald/inhibit"
	"herald/kernel"
	"herald/models"
)

// A request with ack opens an alert (package alert): the intake checks its policy,
// counts everyone the alert can reach against the opener's limits, and writes the alert
// and its first step with the batch. The alerts' service then runs the escalation,
// asking the intake for the notices of each step through alertNotices.

// AckRequest asks for a send to be acknowledged, escalating along the named policy.
type AckRequest struct {
	Policy string `json:"policy"`
}

// checkAck checks a request's acknowledgment: the policy must exist. A template that
// places the acknowledgment link gets its placeholder.
func (d *Dispatcher) checkAck(ctx context.Context, req *Request) error {
	req.Ack.Policy = strings.TrimSpace(req.Ack.Policy)
	if req.Ack.Policy == "" {
		return kernel.Invalid("ack.policy", "alerts.invalid.policy_required")
	}
	if _, err := alert.Of(d.store).PolicyByName(ctx, req.Ack.Policy); errors.Is(err, kernel.ErrNotFound) {
		return kernel.Invalid("ack.policy", "alerts.invalid.unknown_policy", "Name", req.Ack.Policy)
	} else if err != nil {
		return err
	}
	req.ackPlaceholder = alert.NewAckPlaceholder()
	vars, err := d.alerts.AckVariables(ctx, req.Template, req.Variables, req.ackPlaceholder)
	req.Variables = vars
	return err
}

// openAlert prepares the alert a request asks for: the policy it names (copied), and the
// first step, due at once (at send_at, for a scheduled send) when nobody was notified
// by the request itself, else after the first step's wait. It is written with the
// batch (storeAlert), without its first step while the batch awaits approval.
func (d *Dispatcher) openAlert(ctx context.Context, req Request, res *Result) error {
	p, err := alert.Of(d.store).PolicyByName(ctx, req.Ack.Policy)
	if errors.Is(err, kernel.ErrNotFound) {
		return kernel.Invalid("ack.policy", "alerts.invalid.unknown_policy", "Name", req.Ack.Policy)
	}
	if err != nil {
		return err
	}
	now := d.now()
	if err := d.checkAlertReach(ctx, req, res, p, now); err != nil {
		return err
	}
	a := &alert.Alert{BatchID: res.Batch.ID, Policy: p.Name, PolicyCopy: *p, State: alert.AlertOpen,
		AccountID: res.Batch.AccountID, Template: req.Template, Variables: withoutAck(req.Variables), Subject: req.Subject, Text: req.Text,
		CallbackKeyID: req.CallbackKeyID, OpenedAt: now, NoticeCap: req.noticeCap}
	if req.noticeCap > 0 && len(res.Messages) > 0 {
		// The request's own notices are the first of its hour.
		a.NoticeCount, a.NoticeHourAt = len(res.Messages), &now
	}
	res.Alert, res.firstStep = a, d.alerts.FirstStep(p, now, res.Batch.SendAt, len(res.Messages) > 0)
	if req.inhibited != nil {
		// No step until it is released (inhibit.Referee).
		res.firstStep, res.inhibited = nil, req.inhibited
	}
	return nil
}

// checkAlertReach counts everyone an alert under policy p can reach at now, the
// request's people and every step's, against the key's cap (a *kernel.FieldError on
// ack.policy past it) and records it as the batch's reach for the approval threshold.
func (d *Dispatcher) checkAlertReach(ctx context.Context, req Request, res *Result, p *alert.EscalationPolicy, now time.Time) error {
	reach := make(map[int64]bool, len(res.Messages))
	for _, m := range res.Messages {
		reach[m.RecipientID] = true
	}
	for i, s := range p.Steps {
		ids, _, err := d.alerts.ResolveTargets(ctx, s.Targets, now)
		if err != nil {
			return err
		}
		if i == 0 && len(ids) == 0 && len(alert.GroupTargets(s.Targets)) == 0 && len(res.Messages) == 0 &&
			len(req.Recipients)+len(req.RecipientIDs) == 0 && peopleSource(req.Source) {
			// Nobody would hear of the alert until its second step, if ever: a person
			// asking for it is told now, rather than an alert opening that no one sees.
			return kernel.Invalid("ack.policy", "alerts.invalid.first_step_nobody", "Name", p.Name)
		}
		for _, id := range ids {
			reach[id] = true
		}
	}
	if n := len(reach) + len(res.Rejected); req.MaxRecipients > 0 && n > req.MaxRecipients {
		return kernel.Invalid("ack.policy", "alerts.invalid.policy_over_key_cap", "Name", p.Name, "Max", req.MaxRecipients, "Count", n)
	}
	res.reach = len(reach)
	return nil
}

// peopleSource says a request comes from a person or a program asking now (the console,
// the API), who can be told that nobody would be notified; an integration's event or a
// reminder opens its alert regardless, for the escalation to reach whoever it can.
func peopleSource(source string) bool { return source == "console" || source == "api" }

// withoutAck is a request's variables without the acknowledgment link's placeholder.
func withoutAck(vars map[string]string) models.VarMap {
	if _, ok := vars[alert.AckVariable]; !ok {
		return vars
	}
	out := make(models.VarMap, len(vars))
	for k, v := range vars {
		if k != alert.AckVariable {
			out[k] = v
		}
	}
	return out
}

// storeAlert writes an alert's first batch, the alert and its first step in one
// transaction, with the intake's audit entry and the alert's own; respond (may be nil)
// builds the answer an idempotent request replays.
func (d *Dispatcher) storeAlert(ctx context.Context, nb models.NewBatch, res *Result, respond func(*Result) (int, []byte)) error {
	by := audit.Actor{Name: res.Batch.Actor, Type: audit.ActorUser}
	if res.Batch.APIKeyID != nil {
		by.Type = audit.ActorAPIKey
	}
	held := res.Batch.Approval == models.ApprovalAwaiting
	if held {
		// Nobody is notified before the batch is approved, so no step is due: the
		// approval writes the first (alert.Service.StartHeld), a rejection ends the alert.
		res.firstStep = nil
	}
	return d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := alert.Of(tx).CreateAlert(ctx, res.Alert, res.firstStep); err != nil {
			return err
		}
		if idem := nb.Extras.Idem; idem != nil && respond != nil {
			// The answer to replay names the alert, known only now.
			status, body := respond(res)
			idem.StatusCode, idem.Response = status, string(body)
		}
		for i := range nb.Messages {
			nb.Messages[i].AlertID = &res.Alert.ID
		}
		d.alerts.PlaceAckLinks(res.ackPlaceholder, nb.Messages)
		if err := tx.CreateBatch(ctx, nb.Batch, nb.Messages, nb.Extras); err != nil {
			return err
		}
		id := strconv.FormatInt(res.Alert.ID, 10)
		ch.Audit("alert.open", "alert", id, audit.Params{"id": id, "batch": res.Batch.ID, "policy": res.Alert.Policy})
		if res.inhibited != nil {
			return inhibit.Record(ctx, tx, ch, res.Alert, res.inhibited)
		}
		if !held {
			step := *res.firstStep
			ch.After(func() { d.alerts.ScheduleStep(ctx, step) })
		}
		return nil
	})
}

// fireFirstStep fires an alert's first step before the request is answered when it is
// due at once (nobody was named); a failure is left to the recovery poll.
func (d *Dispatcher) fireFirstStep(ctx context.Context, res *Result) {
	now := d.now()
	if res.firstStep == nil || res.firstStep.DueAt.After(now) {
		return
	}
	if _, err := d.alerts.FireAlertStep(ctx, res.firstStep.ID, now); err != nil {
		d.log.Warn("dispatch: first alert step; the recovery poll will fire it", "alert", res.Alert.ID, "error", err)
	}
}

// alertNotices is the intake as the alerts' service sees it (alert.Notices).
type alertNotices struct{ d *Dispatcher }

// PlanNotices plans an alert's notices: a request of the alert's own making, at high
// priority, that notifies (never opens an alert of its own).
func (n alertNotices) PlanNotices(ctx context.Context, a alert.Notice) (*alert.NoticePlan, error) {
	req := Request{Source: alert.SourceEscalation, Actor: "escalation", AccountID: a.AccountID, RecipientIDs: a.RecipientIDs, Groups: a.Groups,
		Template: a.Template, Variables: a.Variables, Subject: a.Subject, Text: a.Text, Priority: models.PriorityHigh,
		CallbackKeyID: a.CallbackKeyID, notice: true, ackPlaceholder: a.AckPlaceholder}
	res, err := n.d.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	return &alert.NoticePlan{Batch: res.Batch, Messages: res.Messages, Names: res.Names, Groups: res.Groups}, nil
}

// WriteNotices writes a plan's batch in tx and enqueues its messages once tx commits.
func (n alertNotices) WriteNotices(ctx context.Context, tx *models.Store, ch *audit.Change, p *alert.NoticePlan) error {
	// Tasks of their own, never a group's: a group enqueues when it fills, which may be
	// before this transaction commits.
	jobs := chunkTasks(p.Batch, p.Messages)
	if err := tx.CreateBatch(ctx, p.Batch, p.Messages, nil); err != nil {
		return err
	}
	ch.After(func() {
		n.d.stats.Count(p.Batch.AccountID, "created", len(p.Messages))
		n.d.enqueue(context.WithoutCancel(ctx), jobs)
	})
	return nil
}

// OverThreshold says whether a batch of n people needs a second person's approval.
func (n alertNotices) OverThreshold(ctx context.Context, count int) (bool, error) {
	_, over, err := n.d.overThreshold(ctx, count)
	return over, err
}

// SourceInbound is the source of the batches an integration's events open.
const SourceInbound = "inbound"

// inboundOpener is the intake as the integrations see it (inbound.Opener): an event
// opens an alert by a send of its notice under the route, acknowledged along the
// route's policy.
type inboundOpener struct{ d *Dispatcher }

// OpenAlert sends an event's notice under its route and returns the alert it opened.
// A route's template gets the event's fields it declares; without one the notice is
// the event's own text.
func (o inboundOpener) OpenAlert(ctx context.Context, op inbound.Opening) (int64, error) {
	r := op.Route
	req := Request{Source: SourceInbound, Actor: "integration:" + op.Integration, Platform: r.Platform, Account: r.Account,
		Recipients: r.Recipients, Priority: models.Priority(r.Priority), Ack: &AckRequest{Policy: r.Policy}, noticeCap: r.MaxNoticesPerHour}
	if r.Template == "" {
		req.Subject, req.Text = op.Subject, op.Text
	} else {
		t, err := o.d.store.Templates().TemplateByName(ctx, r.Template)
		if err != nil {
			return 0, err
		}
		req.Template, req.Variables = r.Template, map[string]string{}
		for _, name := range t.VariableNames() {
			if v, ok := op.Variables[name]; ok {
				req.Variables[name] = v
			}
		}
	}
	if op.Inhibited != nil {
		// Nobody is told of an inhibited alert, not even the route's people.
		req.Recipients, req.inhibited = nil, op.Inhibited
	}
	res, err := o.d.Submit(ctx, req)
	if err != nil {
		return 0, err
	}
	if res.Alert == nil {
		return 0, errors.New("dispatch: an integration's send opened no alert")
	}
	return res.Alert.ID, nil
}
