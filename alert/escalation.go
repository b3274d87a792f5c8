package alert

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"herald/audit"
	"herald/directory"
	"herald/duty"
	"herald/i18n"
	"herald/kernel"
	"herald/models"
)

// The step engine. Each step of an alert is a row with its due time, written when the
// step before it fires (the first when the alert opens). Firing a step is one
// transaction: the compare-and-set of the row's fired_at, the alert's progress, the
// step's notices (a batch of the intake's own making) and its audit entry; the notices
// are enqueued after the commit. Two firers of one step cannot both commit, and a firer
// that dies before committing leaves the row as it was, for the next to fire. An Asynq
// task at the due time fires each step on time; a recovery poll fires whatever is
// overdue (Redis lost the task, a worker died holding it).
//
// After the last step of the last round one more row comes due, the closing check: if
// nobody has acknowledged by then the alert is exhausted and the last step's people hear
// that nobody answered.

// Why a step called nobody.
const (
	SkipRotationOff    = "rotation_off"
	SkipUnknownTarget  = "unknown_target"
	SkipDepartmentGone = "department_empty"
	SkipNoneReachable  = "none_reachable"
	// SkipNobodyCalled is the closing check of an alert that called nobody at all: it
	// is not exhausted but stays open, unrouted, until someone takes it in hand.
	SkipNobodyCalled = "nobody_called"
	// SkipOverKeyCap: the step would take the alert past the max_recipients_per_request
	// of the API key that opened it.
	SkipOverKeyCap = "over_key_cap"
	// SkipNeedsApproval: the step would take an alert nobody approved past the approval
	// threshold.
	SkipNeedsApproval = "needs_approval"
	// SkipNoticeCap: the alert (or its incident) has sent its route's
	// max_notices_per_hour this hour; the step waits for the hour to end (or, naming
	// more people than the whole cap, calls nobody).
	SkipNoticeCap = "notice_cap"
)

// An alert stays inside the limits of whoever opened it. At intake, everyone it can
// reach (the request's people and everyone its policy's steps name then) counts toward
// the API key's max_recipients_per_request (past it the request is refused, naming
// ack.policy) and toward the approval threshold (past it the batch awaits approval,
// and so its escalation). At each step, everyone the alert has called plus the step's
// people count again, as the key's cap and the threshold stand then: a step past
// either (its targets grew) calls nobody, with the reason, and raises the unrouted
// alarm; an alert a second person approved is past the threshold by that approval.

// A step that calls nobody raises the unrouted alarm: its alert.unrouted event, a
// warning in the log, and, while it is the alert's latest step, the dashboard's alarm
// and the herald_alerts_unrouted gauge (models.CountUnroutedAlerts). The next step
// still comes due at once, so a reachable later step is not delayed; but an alert that
// called nobody through every step and round is never exhausted (nobody would hear
// that nobody answered): it stays open and unrouted.

// errStepTaken rolls back a firing that lost the step to another firer, or found the
// alert no longer open.
var errStepTaken = errors.New("alert: alert step taken")

// stepOverLimits reports why calling ids at a step of alert a would take it past its
// opener's limits (SkipOverKeyCap, SkipNeedsApproval), or "" when it would not.
func (d *Service) stepOverLimits(ctx context.Context, a *Alert, ids []int64) (string, error) {
	b, err := d.store.BatchByID(ctx, a.BatchID)
	if err != nil {
		return "", err
	}
	called, err := Of(d.store).AlertRecipients(ctx, a.ID)
	if err != nil {
		return "", err
	}
	reach := make(map[int64]bool, len(called)+len(ids))
	for _, id := range slices.Concat(called, ids) {
		reach[id] = true
	}
	if b.APIKeyID != nil {
		k, err := d.store.Access().APIKeyByID(ctx, *b.APIKeyID)
		if err != nil && !errors.Is(err, kernel.ErrNotFound) {
			return "", err
		}
		if k != nil && k.MaxRecipientsPerRequest > 0 && len(reach) > k.MaxRecipientsPerRequest {
			return SkipOverKeyCap, nil
		}
	}
	if b.Approval == models.ApprovalApproved {
		return "", nil
	}
	if d.notices == nil {
		return "", nil
	}
	if over, err := d.notices.OverThreshold(ctx, len(reach)); err != nil || over {
		return SkipNeedsApproval, err
	}
	return "", nil
}

// FirstStep is an alert's first step once its notices go out at released (or at the
// batch's send_at, if later): due a wait after that when the request notified someone,
// else at once.
func (d *Service) FirstStep(p *EscalationPolicy, released time.Time, sendAt *time.Time, notified bool) *AlertStep {
	due := released
	if sendAt != nil && sendAt.After(due) {
		due = sendAt.UTC()
	}
	if notified {
		due = due.Add(stepWait(p.Steps[0], d.minStepWait))
	}
	return &AlertStep{N: 1, Round: 1, DueAt: due}
}

// StartHeld starts, in tx, the escalation of the alert of a batch that waited for
// approval and has just been approved: until then nobody was notified, so no step was
// due. The alert's clock starts now (opened_at), and step 1 comes due a wait after the
// notices go out. An alert that someone acknowledged or resolved while it waited stays
// as it is.
func (d *Service) StartHeld(ctx context.Context, tx *models.Store, ch *audit.Change, b *models.Batch) error {
	a, err := Of(tx).AlertOfBatch(ctx, b.ID)
	if errors.Is(err, kernel.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	now := d.now()
	moved, err := Of(tx).MoveAlert(ctx, a.ID, AlertEscalating, map[string]any{"opened_at": now})
	if err != nil || !moved {
		return err
	}
	first := d.FirstStep(&a.PolicyCopy, now, b.SendAt, true)
	first.AlertID = a.ID
	if err := Of(tx).AddAlertStep(ctx, first); err != nil {
		return err
	}
	ch.After(func() { d.ScheduleStep(ctx, *first) })
	return nil
}

// EndRejected ends, in tx, the alert of a batch that was rejected: nobody will be
// notified, so there is nothing to acknowledge. It is resolved (not exhausted: nobody
// was asked, and the 无人响应 notice would go to people who never heard of it), by the
// person who rejected the batch, via "rejection", with the reason as its note.
func (d *Service) EndRejected(ctx context.Context, tx *models.Store, ch *audit.Change, by audit.Actor, batchID, reason string) error {
	a, err := Of(tx).ResolveRejectedAlert(ctx, batchID, by.Name, d.now())
	if err != nil || a == nil {
		return err
	}
	if err := cancelCalls(ctx, d.calls, tx, a, CallCancelledResolved, d.now()); err != nil {
		return err
	}
	if a.CallbackKeyID != nil {
		d.kick(ch, *a.CallbackKeyID)
	}
	id := strconv.FormatInt(a.ID, 10)
	ch.Audit(resolveMove.action, "alert", id, audit.Params{"id": id, "by": by.Name, "via": AckViaRejection, "note": reason})
	return nil
}

// PlaceAckLinks puts each message's acknowledgment link where its template placed
// {{.ack_url}} (rendered as placeholder), and always appends a line with the link: what
// the template and the caller's variables make of the content, the notice ends with
// the genuine link on a line of Herald's own.
func (d *Service) PlaceAckLinks(placeholder string, msgs []models.Message) {
	for i := range msgs {
		m := &msgs[i]
		link := ""
		if d.ackLink != nil {
			link = d.ackLink(m.ID, m.RecipientID)
		}
		if placeholder != "" {
			m.Subject = strings.ReplaceAll(m.Subject, placeholder, link)
			m.Content = strings.ReplaceAll(m.Content, placeholder, link)
			m.ContentHTML = strings.ReplaceAll(m.ContentHTML, placeholder, link)
		}
		if link != "" {
			m.Content += "\n\n" + i18n.In(i18n.Chinese, "alerts.notice.ack_line", "URL", link)
		}
	}
}

// placeNoLinks takes the acknowledgment link's placeholder out of messages that carry
// no link (calls, acknowledged by keypad).
func placeNoLinks(placeholder string, msgs []models.Message) {
	for i := range msgs {
		m := &msgs[i]
		m.Subject = strings.ReplaceAll(m.Subject, placeholder, "")
		m.Content = strings.ReplaceAll(m.Content, placeholder, "")
		m.ContentHTML = strings.ReplaceAll(m.ContentHTML, placeholder, "")
	}
}

// AckVariables gives a template that declares ack_url the placeholder, so an alert's
// notices can be rendered before their links exist.
func (d *Service) AckVariables(ctx context.Context, template string, vars map[string]string, placeholder string) (map[string]string, error) {
	if template == "" {
		return vars, nil
	}
	t, err := d.store.Templates().TemplateByName(ctx, template)
	if err != nil {
		return vars, nil // the intake names the problem with the template
	}
	if !slices.Contains(t.VariableNames(), AckVariable) {
		return vars, nil
	}
	out := make(map[string]string, len(vars)+1)
	for k, v := range vars {
		out[k] = v
	}
	out[AckVariable] = placeholder
	return out, nil
}

// ScheduleStep hands a step to Asynq for its due time. A failure loses nothing: the
// recovery poll fires the step once it is overdue.
func (d *Service) ScheduleStep(ctx context.Context, s AlertStep) {
	if d.steps == nil {
		return
	}
	if err := d.steps.EnqueueAlertStep(context.WithoutCancel(ctx), s.ID, s.DueAt); err != nil {
		d.log.Warn("alert: alert step not enqueued; the recovery poll will fire it", "error", err, "step", s.ID)
	}
}

// FireAlertStep fires a step of an alert if it is due at now and has not fired: it
// calls the step's people (or records why there are none) and schedules the next step,
// or, for the closing check, exhausts the alert. A next step due at once (the step
// called nobody) fires before it returns. It reports whether this call fired the step.
func (d *Service) FireAlertStep(ctx context.Context, stepID int64, now time.Time) (bool, error) {
	fired := false
	for stepID != 0 {
		next, ok, err := d.fireStep(ctx, stepID, now)
		if err != nil || !ok {
			return fired, err
		}
		fired = true
		stepID = 0
		if next != nil && !next.DueAt.After(now) {
			stepID = next.ID
		}
	}
	return fired, nil
}

// FireDueAlertSteps fires every step due by now that has not fired: the recovery poll.
// It returns how many it fired.
func (d *Service) FireDueAlertSteps(ctx context.Context, now time.Time) (int, error) {
	return d.fireDue(ctx, now, now)
}

// fireDue fires the steps due by dueBy that have not fired, as at now.
func (d *Service) fireDue(ctx context.Context, dueBy, now time.Time) (int, error) {
	due, err := Of(d.store).DueAlertSteps(ctx, dueBy, dueStepsPage)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range due {
		ok, err := d.FireAlertStep(ctx, s.ID, now)
		if err != nil {
			d.log.Warn("alert: fire alert step", "step", s.ID, "error", err)
			continue
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// dueStepsPage is how many overdue steps one recovery pass looks at.
const dueStepsPage = 500

// fireStep fires one step; ok is false when it was not due, already fired or
// cancelled, or its alert is no longer open.
func (d *Service) fireStep(ctx context.Context, stepID int64, now time.Time) (next *AlertStep, ok bool, err error) {
	s, err := Of(d.store).AlertStepByID(ctx, stepID)
	if err != nil || s.FiredAt != nil || s.CancelledAt != nil || s.DueAt.After(now) {
		return nil, false, err
	}
	a, err := Of(d.store).AlertByID(ctx, s.AlertID)
	if err != nil || !a.Escalating() {
		return nil, false, err
	}
	if s.N > len(a.PolicyCopy.Steps) {
		ok, err := d.exhaust(ctx, a, s, now)
		return nil, ok, err
	}
	call, err := d.planStep(ctx, a, s, now)
	if err != nil {
		return nil, false, err
	}
	next = nextStep(a, s, now, call.reason != "", d.minStepWait)
	held := false
	err = d.change(ctx, audit.System("escalation"), func(tx *models.Store, ch *audit.Change) error {
		if call.plan != nil && a.NoticeCap > 0 {
			within, err := Of(tx).TakeNotices(ctx, a.ID, len(call.plan.Messages), now)
			if err != nil {
				return err
			}
			if until, wait := capLifts(a, now); !within && wait {
				held = true
				return holdStep(ctx, d, tx, ch, a, s, until)
			}
			if !within {
				// More people than the whole cap: the step calls nobody, saying why.
				call = stepCall{reason: SkipNoticeCap}
			}
		}
		if err := d.claimStep(ctx, tx, a, s, now); err != nil {
			return err
		}
		if call.plan != nil {
			if err := d.writeAlertBatch(ctx, tx, ch, a.ID, call.plan); err != nil {
				return err
			}
		}
		if call.calls != nil && d.calls != nil {
			call.calls.Messages, call.calls.Names = call.plan.Messages, call.plan.Names
			if err := d.calls.RecordCalls(ctx, tx, *call.calls); err != nil {
				return err
			}
		}
		batchID := ""
		if call.plan != nil && len(call.plan.Messages) > 0 {
			batchID = call.plan.Batch.ID
		}
		if err := Of(tx).RecordAlertStep(ctx, s.ID, call.targets, call.reason, batchID); err != nil {
			return err
		}
		if err := Of(tx).AddAlertStep(ctx, next); err != nil {
			return err
		}
		if err := d.alertEvent(ctx, tx, ch, a, EventAlertEscalated, AlertEvent{State: AlertOpen, Step: s.N, Round: s.Round}, now); err != nil {
			return err
		}
		if call.reason != "" {
			if err := d.unrouted(ctx, tx, ch, a, s, call.reason, now); err != nil {
				return err
			}
		}
		id := strconv.FormatInt(a.ID, 10)
		ch.Audit("alert.step", "alert", id, audit.Params{"id": id, "n": strconv.Itoa(s.N), "round": strconv.Itoa(s.Round),
			"targets": strings.Join(call.targets, ", "), "reason": call.reason})
		nextStep := *next
		ch.After(func() { d.ScheduleStep(ctx, nextStep) })
		return nil
	})
	if errors.Is(err, errStepTaken) {
		return nil, false, nil
	}
	if err != nil || held {
		return nil, false, err
	}
	return next, true, nil
}

// capLifts is when alert a may send again, having sent its notice cap this hour: the
// end of the hour that began with its first notice; false when that hour is over (a
// step that still does not fit is larger than the whole cap).
func capLifts(a *Alert, now time.Time) (time.Time, bool) {
	if a.NoticeHourAt == nil {
		return time.Time{}, false
	}
	until := a.NoticeHourAt.Add(time.Hour)
	return until, until.After(now)
}

// holdStep keeps step s of alert a, which would take it past the route's
// max_notices_per_hour, until the cap lifts: the step comes due then, saying why it
// waits (SkipNoticeCap), and the cap reached is audited, once for the hour. A
// compare-and-set on the step as read: errStepTaken when it moved meanwhile.
func holdStep(ctx context.Context, d *Service, tx *models.Store, ch *audit.Change, a *Alert, s *AlertStep, until time.Time) error {
	moved, err := Of(tx).PostponeAlertStep(ctx, s, until, SkipNoticeCap)
	if err != nil {
		return err
	}
	if !moved {
		return errStepTaken
	}
	id := strconv.FormatInt(a.ID, 10)
	ch.Audit("alert.notice_cap", "alert", id, audit.Params{"id": id, "cap": strconv.Itoa(a.NoticeCap), "n": strconv.Itoa(s.N),
		"round": strconv.Itoa(s.Round)})
	waiting := *s
	waiting.DueAt = until
	ch.After(func() { d.ScheduleStep(ctx, waiting) })
	return nil
}

// claimStep is the compare-and-set that makes a step fire once: the row not fired yet,
// the alert still open. It moves the alert's step and round on.
func (d *Service) claimStep(ctx context.Context, tx *models.Store, a *Alert, s *AlertStep, now time.Time) error {
	claimed, err := Of(tx).ClaimAlertStep(ctx, s.ID, now)
	if err != nil {
		return err
	}
	if !claimed {
		return errStepTaken
	}
	set := map[string]any{"step": s.N, "round": s.Round}
	if s.N > len(a.PolicyCopy.Steps) {
		set = map[string]any{"state": AlertExhausted, "ended_at": now}
	}
	moved, err := Of(tx).MoveAlert(ctx, a.ID, AlertEscalating, set)
	if err != nil {
		return err
	}
	if !moved {
		return errStepTaken
	}
	if d.afterClaim != nil {
		return d.afterClaim()
	}
	return nil
}

// nextStep is the row that comes due after step s fires at now: the policy's next step,
// the first of the next round, or after the last round the closing check. It is due
// once s's wait has passed, or at once when s called nobody.
func nextStep(a *Alert, s *AlertStep, now time.Time, nobody bool, shortest time.Duration) *AlertStep {
	steps := a.PolicyCopy.Steps
	due := now.Add(stepWait(steps[s.N-1], shortest))
	if nobody {
		due = now
	}
	n, round := s.N+1, s.Round
	if n > len(steps) && round <= a.PolicyCopy.Repeat {
		n, round = 1, round+1
	}
	return &AlertStep{AlertID: a.ID, N: n, Round: round, DueAt: due}
}

// stepCall is what firing a step does: the notices to write (nil for none), whom they
// go to, or why nobody.
type stepCall struct {
	plan    *NoticePlan
	targets []string
	reason  string
	// calls are the step's calls to record, when it goes by voice.
	calls *StepCalls
}

// planStep works out whom a step calls at now and their notices.
func (d *Service) planStep(ctx context.Context, a *Alert, s *AlertStep, now time.Time) (stepCall, error) {
	targets := a.PolicyCopy.Steps[s.N-1].Targets
	ids, reason, err := d.ResolveTargets(ctx, targets, now)
	groups := GroupTargets(targets)
	if err != nil || len(ids) == 0 && len(groups) == 0 {
		return stepCall{reason: reason}, err
	}
	if reason, err := d.stepOverLimits(ctx, a, ids); err != nil || reason != "" {
		return stepCall{reason: reason}, err
	}
	if d.notices == nil {
		return stepCall{reason: SkipNoneReachable}, nil
	}
	placeholder := NewAckPlaceholder()
	vars, err := d.AckVariables(ctx, a.Template, a.Variables, placeholder)
	if err != nil {
		return stepCall{}, err
	}
	step := a.PolicyCopy.Steps[s.N-1]
	account, platform, ok, err := d.stepAccount(ctx, a, step)
	if err != nil || !ok {
		return stepCall{reason: SkipViaGone}, err
	}
	n := Notice{AccountID: account, RecipientIDs: ids, Groups: groups, Template: a.Template, Variables: vars, Subject: a.Subject,
		Text: a.Text, CallbackKeyID: a.CallbackKeyID, AckPlaceholder: placeholder}
	if a.Template == "" {
		n.Variables = nil
	}
	if a.IncidentID != nil && d.digest != nil {
		// An incident's notices list its alerts.
		lines, err := d.digest(ctx, *a.IncidentID)
		if err != nil {
			return stepCall{}, err
		}
		if a.Template == "" && lines != "" {
			n.Text += "\n" + lines
		}
	}
	plan, err := d.notices.PlanNotices(ctx, n)
	if fe := (*kernel.FieldError)(nil); step.Via != "" && errors.As(err, &fe) {
		// The alert's content cannot go the step's way (an SMS or a call through a
		// cloud provider needs a template naming the provider's): the step calls
		// nobody, saying why, rather than failing again at every poll.
		d.log.Warn("alert: a step's notices cannot go by its via", "alert", a.ID, "step", s.N, "via", step.Via, "error", err)
		return stepCall{reason: SkipViaUnfit}, nil
	}
	if err != nil {
		return stepCall{}, err
	}
	if len(plan.Messages) == 0 {
		return stepCall{reason: SkipNoneReachable}, nil
	}
	call := stepCall{plan: plan}
	if platform == VoicePlatform {
		// A link is no use read out on a call: the keypad acknowledges.
		placeNoLinks(placeholder, plan.Messages)
		call.calls = &StepCalls{AlertID: a.ID, N: s.N, Round: s.Round, Advance: step.AdvanceOnNoAnswer}
	} else {
		d.PlaceAckLinks(placeholder, plan.Messages)
	}
	for _, m := range plan.Messages {
		if m.ChatGroupID != nil {
			call.targets = append(call.targets, TargetGroup+plan.Groups[*m.ChatGroupID])
			continue
		}
		call.targets = append(call.targets, plan.Names[m.RecipientID])
	}
	return call, nil
}

// GroupTargets are the chat groups a step's targets name (group:<name>): the step
// posts to each.
func GroupTargets(targets []string) []string {
	var out []string
	for _, t := range targets {
		if kind, name := parseTarget(t); kind == TargetGroup && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// ResolveTargets finds the people a step's targets name at now, in the order named,
// once each. With nobody, reason says why (the first target's reason).
func (d *Service) ResolveTargets(ctx context.Context, targets []string, now time.Time) (ids []int64, reason string, err error) {
	seen := map[int64]bool{}
	for _, t := range targets {
		found, why, err := d.resolveTarget(ctx, t, now)
		if err != nil {
			return nil, "", err
		}
		if len(found) == 0 && reason == "" {
			reason = why
		}
		for _, id := range found {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	if len(ids) > 0 {
		reason = ""
	}
	return ids, reason, nil
}

// resolveTarget finds the people one target names at now, or why there are none.
func (d *Service) resolveTarget(ctx context.Context, target string, now time.Time) ([]int64, string, error) {
	kind, name := parseTarget(target)
	switch kind {
	case TargetOnDuty:
		roster, err := d.duty.RosterOn(ctx, now)
		if err != nil {
			return nil, "", err
		}
		if roster.Empty() {
			if roster.DayOff() {
				return nil, duty.ReasonHoliday, nil
			}
			return nil, duty.ReasonDutyNotConfigured, nil
		}
		ids := make([]int64, 0, len(roster.OnDuty))
		for id := range roster.OnDuty {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return ids, "", nil
	case targetRotation:
		date, _ := duty.DateOf(now, d.loc)
		k := 0
		if strings.HasSuffix(target, backupSuffix) {
			k = 1
		}
		ids, err := d.store.Duty().RotationTurnOn(ctx, name, date, k)
		if errors.Is(err, kernel.ErrNotFound) {
			return nil, SkipUnknownTarget, nil
		}
		if err != nil {
			return nil, "", err
		}
		if len(ids) == 0 {
			return nil, SkipRotationOff, nil
		}
		return ids, "", nil
	case targetDepartment:
		people, err := d.store.Directory().ActiveRecipientsIn(ctx, []string{name}, nil, directory.MaxRecipients)
		if err != nil || len(people) == 0 {
			return nil, SkipDepartmentGone, err
		}
		return recipientIDs(people), "", nil
	case TargetGroup:
		// A chat group is posted to, not a person called (groupTargets).
		return nil, "", nil
	}
	people, err := d.store.Directory().CachedRecipientsByExternalIDs(ctx, []string{name})
	if err != nil || len(people) == 0 {
		return nil, SkipUnknownTarget, err
	}
	return recipientIDs(people), "", nil
}

func recipientIDs(people []directory.Recipient) []int64 {
	ids := make([]int64, len(people))
	for i, p := range people {
		ids[i] = p.ID
	}
	return ids
}

// unrouted raises the alarm of a step of a that called nobody, for reason: its
// alert.unrouted event and, once the firing commits, a warning in the log.
func (d *Service) unrouted(ctx context.Context, tx *models.Store, ch *audit.Change, a *Alert, s *AlertStep, reason string, now time.Time) error {
	if err := d.alertEvent(ctx, tx, ch, a, EventAlertUnrouted, AlertEvent{State: AlertOpen, Step: s.N, Round: s.Round}, now); err != nil {
		return err
	}
	ch.After(func() {
		d.log.Warn("alert: alert step called nobody", "alert", a.ID, "step", s.N, "round", s.Round, "reason", reason)
	})
	return nil
}

// keepUnrouted runs the closing check of an alert that called nobody at all: it is not
// exhausted but stays open, unrouted (the dashboard keeps its alarm), with the check
// recorded as SkipNobodyCalled and audited.
func (d *Service) keepUnrouted(ctx context.Context, a *Alert, s *AlertStep, now time.Time) (bool, error) {
	err := d.change(ctx, audit.System("escalation"), func(tx *models.Store, ch *audit.Change) error {
		claimed, err := Of(tx).ClaimAlertStep(ctx, s.ID, now)
		if err != nil {
			return err
		}
		if !claimed {
			return errStepTaken
		}
		if err := Of(tx).RecordAlertStep(ctx, s.ID, nil, SkipNobodyCalled, ""); err != nil {
			return err
		}
		if err := d.unrouted(ctx, tx, ch, a, s, SkipNobodyCalled, now); err != nil {
			return err
		}
		id := strconv.FormatInt(a.ID, 10)
		ch.Audit("alert.unrouted", "alert", id, audit.Params{"id": id, "policy": a.Policy})
		return nil
	})
	if errors.Is(err, errStepTaken) {
		return false, nil
	}
	return err == nil, err
}

// exhaust runs an alert's closing check: nobody acknowledged through every step and
// round, so the alert is exhausted and the last step's people hear that nobody answered.
// An alert that called nobody at all is kept open instead (keepUnrouted).
func (d *Service) exhaust(ctx context.Context, a *Alert, s *AlertStep, now time.Time) (bool, error) {
	called, err := Of(d.store).AlertRecipients(ctx, a.ID)
	if err != nil {
		return false, err
	}
	if len(called) == 0 {
		return d.keepUnrouted(ctx, a, s, now)
	}
	steps, err := Of(d.store).AlertSteps(ctx, a.ID)
	if err != nil {
		return false, err
	}
	var last []string
	for _, st := range steps {
		if st.N == len(a.PolicyCopy.Steps) && st.Round == s.Round {
			last = st.Targets
		}
	}
	people, err := d.store.Directory().CachedRecipientsByExternalIDs(ctx, last)
	if err != nil {
		return false, err
	}
	err = d.change(ctx, audit.System("escalation"), func(tx *models.Store, ch *audit.Change) error {
		if err := d.claimStep(ctx, tx, a, s, now); err != nil {
			return err
		}
		if err := cancelCalls(ctx, d.calls, tx, a, CallCancelledExhausted, now); err != nil {
			return err
		}
		text := i18n.In(i18n.Chinese, "alerts.notice.exhausted", "Subject", alertTitle(a))
		if err := d.WriteNotice(ctx, tx, ch, a, recipientIDs(people), text); err != nil {
			return err
		}
		if err := d.alertEvent(ctx, tx, ch, a, EventAlertExhausted, AlertEvent{State: AlertExhausted, Step: a.Step, Round: a.Round}, now); err != nil {
			return err
		}
		id := strconv.FormatInt(a.ID, 10)
		ch.Audit("alert.exhaust", "alert", id, audit.Params{"id": id, "targets": strings.Join(last, ", ")})
		return nil
	})
	if errors.Is(err, errStepTaken) {
		return false, nil
	}
	return err == nil, err
}

// FireAlertStepNow fires a step from its Asynq task. Asynq keeps due times in whole
// seconds, so the task may run up to a second before the step is due: it then leaves a
// timer in this process to fire the step on time and returns, so that a thousand steps
// due in one second do not hold a thousand worker slots while they wait. Should the
// process die first, the recovery poll fires the step (the row, not the timer, is the
// truth). A step due later than that is left to a later task or the poll.
func (d *Service) FireAlertStepNow(ctx context.Context, stepID int64) error {
	s, err := Of(d.store).AlertStepByID(ctx, stepID)
	if errors.Is(err, kernel.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	wait := s.DueAt.Sub(d.now())
	switch {
	case wait > maxEarly:
		return nil
	case wait > 0:
		time.AfterFunc(wait, func() {
			if _, err := d.FireAlertStep(context.Background(), stepID, d.now()); err != nil {
				d.log.Warn("alert: fire alert step; the recovery poll will retry", "step", stepID, "error", err)
			}
		})
		return nil
	}
	_, err = d.FireAlertStep(ctx, stepID, d.now())
	return err
}

// maxEarly is how early a step's task may run and still fire the step on time.
const maxEarly = 2 * time.Second

// RunEscalationPoll fires overdue steps every interval until ctx ends: the recovery of
// steps whose task Redis lost or whose worker died. Steps are left to their own task
// for a moment past due (pollGrace) so that the two rarely race; the claim makes a race
// harmless.
func (d *Service) RunEscalationPoll(ctx context.Context, every time.Duration) {
	kernel.Every(ctx, every, func() {
		now := d.now()
		if _, err := d.fireDue(ctx, now.Add(-pollGrace), now); err != nil && ctx.Err() == nil {
			d.log.Warn("alert: escalation poll", "error", err)
		}
	})
}

// pollGrace is how long past due the recovery poll leaves a step to its task.
const pollGrace = time.Second

// EndRecalled ends, in tx, the alert whose notice m was just recalled (or cancelled
// by a recall): the text was taken back, so its escalation must not call the next
// person with it. The alert is resolved by recalledBy, via "recall" (not exhausted:
// nobody failed to answer), its pending steps cancelled, with its audit entry and its
// alert.resolved event, as a rejection ends the alert of its batch. A message of no
// alert, or of one that has ended, changes nothing.
func (d *Service) EndRecalled(ctx context.Context, tx *models.Store, ch *audit.Change, m *models.Message, recalledBy string) error {
	if m.AlertID == nil {
		return nil
	}
	a, err := Of(tx).ResolveRecalledAlert(ctx, *m.AlertID, recalledBy, d.now())
	if err != nil || a == nil {
		return err
	}
	if err := cancelCalls(ctx, d.calls, tx, a, CallCancelledResolved, d.now()); err != nil {
		return err
	}
	if a.CallbackKeyID != nil {
		d.kick(ch, *a.CallbackKeyID)
	}
	id := strconv.FormatInt(a.ID, 10)
	ch.Audit(resolveMove.action, "alert", id, audit.Params{"id": id, "by": recalledBy, "via": AlertViaRecall,
		"message": m.ID})
	return nil
}
