package alert

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"herald/audit"
	"herald/internal/states"
	"herald/kernel"
	"herald/migrations"
	"herald/models"
	"herald/templates"
)

// Alert states: open → acknowledged → resolved, open → exhausted, open → resolved.
const (
	AlertOpen         = "open"
	AlertAcknowledged = "acknowledged"
	AlertResolved     = "resolved"
	AlertExhausted    = "exhausted"
)

// AlertStates lists the alert states in the order pages show them.
var AlertStates = []string{AlertOpen, AlertAcknowledged, AlertResolved, AlertExhausted}

// alertMoves are the moves an alert may make, by the state it leaves. Every move is a
// compare-and-set in the store (MoveAlert), conditioned on the states that may make it.
var alertMoves = map[string][]string{
	// Acknowledged by someone it called; resolved by anyone, or because its batch was
	// rejected or a notice of it recalled; exhausted when its last round passes with
	// nobody acknowledging.
	AlertOpen: {AlertAcknowledged, AlertResolved, AlertExhausted},
	// Resolved; nobody is called any more, so it cannot be exhausted.
	AlertAcknowledged: {AlertResolved},
}

// alertTable is the alert lifecycle.
var alertTable = states.New(AlertStates, alertMoves)

// The compare-and-set lists of alert moves, named for the question.
var (
	// AlertAcknowledgeable are the states an alert may be acknowledged in.
	AlertAcknowledgeable = alertTable.From(AlertAcknowledged)
	// AlertResolvable are the states an alert may be resolved in.
	AlertResolvable = alertTable.From(AlertResolved)
	// AlertEscalating are the states an alert escalates in, those it may be exhausted
	// in: its steps fire and move its step on, and its clock starts when the batch that
	// held it is approved.
	AlertEscalating = alertTable.From(AlertExhausted)
)

// CanMoveTo reports whether the alert, in the state it is in, may move to state to.
func (a *Alert) CanMoveTo(to string) bool { return alertTable.Allowed(a.State, to) }

// Escalating reports whether the alert is in a state it escalates in (AlertEscalating).
func (a *Alert) Escalating() bool { return slices.Contains(AlertEscalating, a.State) }

// Alert status callback events.
const (
	EventAlertEscalated    = "alert.escalated"
	EventAlertAcknowledged = "alert.acknowledged"
	EventAlertResolved     = "alert.resolved"
	EventAlertExhausted    = "alert.exhausted"
	// EventAlertUnrouted: a step of the alert found nobody to call.
	EventAlertUnrouted = "alert.unrouted"
)

// SourceEscalation is the source of the batches Herald sends for an alert: its steps and
// the notices of its acknowledgment and exhaustion.
const SourceEscalation = "escalation"

// PolicyStep is one step of an escalation policy: whom to call, how, then how long to
// wait for an acknowledgment before the next step.
type PolicyStep struct {
	Targets []string `json:"targets"`
	Wait    string   `json:"wait"`
	// Via is how the step's notices go: "" by the alert's own account, a platform's
	// name by that platform's default account ("voice", "sms"), or an account's name.
	Via string `json:"via,omitempty"`
	// AdvanceOnNoAnswer fires the next step at once when a call of this step was not
	// answered or the line was busy; only a step that calls (its via is a voice
	// account) may say it.
	AdvanceOnNoAnswer bool `json:"advance_on_no_answer,omitempty"`
}

// EscalationPolicy is a named chain of steps an alert follows until someone acknowledges.
type EscalationPolicy struct {
	ID    int64        `json:"-"`
	Name  string       `json:"name"`
	Steps []PolicyStep `gorm:"serializer:json" json:"steps"`
	// Repeat is how many more times the whole chain runs after its last step.
	Repeat      int       `gorm:"column:repeats" json:"repeat"`
	NotifyOnAck bool      `json:"notify_on_ack"`
	CreatedAt   time.Time `json:"-"`
	UpdatedAt   time.Time `json:"-"`
}

// TableName implements gorm's tabler.
func (EscalationPolicy) TableName() string { return "escalation_policies" }

// Alert is a batch that needs someone to acknowledge it, and how far its escalation got.
type Alert struct {
	ID      int64
	BatchID string
	// Policy names the policy the alert opened under; PolicyCopy is that policy as it
	// was then: editing or deleting the policy changes no alert in flight.
	Policy     string
	PolicyCopy EscalationPolicy `gorm:"serializer:json"`
	State      string
	// Step and Round are the last step fired (from 1) and the round it was in (from 1);
	// 0 before the first.
	Step  int
	Round int
	// What every notice of the alert says, through which account.
	AccountID     int64
	Template      string
	Variables     models.VarMap
	Subject       string
	Text          string
	CallbackKeyID *int64
	OpenedAt      time.Time
	// Who acknowledged and resolved it (an external id or a console user), how (link,
	// api, console, wecom) and when.
	AcknowledgedBy  string
	AcknowledgedVia string
	AcknowledgedAt  *time.Time
	ResolvedBy      string
	ResolvedVia     string
	ResolvedAt      *time.Time
	// EndedAt is when it was resolved or exhausted.
	EndedAt *time.Time
	// An alert a monitoring tool posted: the integration it came through (Source), its
	// dedup key, labels and severity, and how many events of it came, the last when.
	Source      string
	DedupKey    string
	Labels      map[string]string `gorm:"serializer:json"`
	Severity    string
	EventCount  int
	LastEventAt *time.Time
	// IncidentID is the incident the alert belongs to (package incident); nil: none.
	IncidentID *int64
	// Flapping: its dedup key opened and recovered too often of late; it sends nothing.
	Flapping bool
	// NoticeCap is how many notices the alert may send an hour (0: no bound);
	// NoticeCount how many it sent in the hour that began at NoticeHourAt.
	NoticeCap    int
	NoticeCount  int
	NoticeHourAt *time.Time
}

// TableName implements gorm's tabler.
func (Alert) TableName() string { return "alerts" }

// AlertStep is one step of an alert in one round: when it is due, and once fired whom it
// called (external ids), or why it called nobody.
type AlertStep struct {
	ID            int64
	AlertID       int64
	N             int
	Round         int
	DueAt         time.Time
	FiredAt       *time.Time
	CancelledAt   *time.Time
	Targets       templates.StringList
	SkippedReason string
	// BatchID is the batch that carries the step's notices once it fired ("" when it
	// called nobody, or fired before steps recorded it).
	BatchID string
}

// TableName implements gorm's tabler.
func (AlertStep) TableName() string { return "alert_steps" }

// MaxPolicyName is the longest policy name.
const MaxPolicyName = 64

// Policies lists every escalation policy by name.
func (s *Ledger) Policies(ctx context.Context) ([]EscalationPolicy, error) {
	var out []EscalationPolicy
	if err := s.k.Reader(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("alert: policies: %w", err)
	}
	return out, nil
}

// PolicyByName finds a policy; ErrNotFound if none has the name.
func (s *Ledger) PolicyByName(ctx context.Context, name string) (*EscalationPolicy, error) {
	var out []EscalationPolicy
	if err := s.k.Reader(ctx).Where("name = ?", name).Limit(1).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("alert: policy %s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("alert: policy %s: %w", name, kernel.ErrNotFound)
	}
	return &out[0], nil
}

// CreatePolicy saves a new policy; a name taken is a field error on name.
func (s *Ledger) CreatePolicy(ctx context.Context, p *EscalationPolicy) error {
	if err := s.k.Writer(ctx).Create(p).Error; err != nil {
		if kernel.IsDuplicate(err) {
			return kernel.DuplicateField("name", "alerts.invalid.name_taken")
		}
		return fmt.Errorf("alert: create policy: %w", err)
	}
	return nil
}

// UpdatePolicy replaces the policy called name with p (which may rename it) and returns
// it as it was.
func (s *Ledger) UpdatePolicy(ctx context.Context, name string, p *EscalationPolicy) (*EscalationPolicy, error) {
	before, err := s.PolicyByName(ctx, name)
	if err != nil {
		return nil, err
	}
	p.ID, p.CreatedAt = before.ID, before.CreatedAt
	res := s.k.Writer(ctx).Model(&EscalationPolicy{}).Where("id = ? AND updated_at = ?", before.ID, before.UpdatedAt).Select("*").Updates(p)
	if res.Error != nil {
		if kernel.IsDuplicate(res.Error) {
			return nil, kernel.DuplicateField("name", "alerts.invalid.name_taken")
		}
		return nil, fmt.Errorf("alert: update policy: %w", res.Error)
	}
	if res.RowsAffected != 1 {
		return nil, fmt.Errorf("alert: policy %s changed meanwhile: %w", name, kernel.ErrStateChanged)
	}
	return before, nil
}

// DeletePolicy removes a policy. Alerts keep their copy.
func (s *Ledger) DeletePolicy(ctx context.Context, name string) error {
	res := s.k.Writer(ctx).Where("name = ?", name).Delete(&EscalationPolicy{})
	if res.Error != nil {
		return fmt.Errorf("alert: delete policy: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("alert: policy %s: %w", name, kernel.ErrNotFound)
	}
	return nil
}

// CreateAlert writes an alert and its first step; first is nil for an alert whose
// batch awaits approval, whose first step is written when it is approved.
func (s *Ledger) CreateAlert(ctx context.Context, a *Alert, first *AlertStep) error {
	return s.k.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(a).Error; err != nil {
			return fmt.Errorf("alert: create alert: %w", err)
		}
		if first == nil {
			return nil
		}
		first.AlertID = a.ID
		if err := tx.Create(first).Error; err != nil {
			return fmt.Errorf("alert: create alert step: %w", err)
		}
		return nil
	})
}

// AlertByID finds an alert; ErrNotFound if there is none.
func (s *Ledger) AlertByID(ctx context.Context, id int64) (*Alert, error) {
	var out []Alert
	if err := s.k.Reader(ctx).Where("id = ?", id).Limit(1).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("alert: alert %d: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("alert: alert %d: %w", id, kernel.ErrNotFound)
	}
	return &out[0], nil
}

// AlertOfBatch finds the alert a batch opened; ErrNotFound if it opened none.
func (s *Ledger) AlertOfBatch(ctx context.Context, batchID string) (*Alert, error) {
	var out []Alert
	if err := s.k.Reader(ctx).Where("batch_id = ?", batchID).Limit(1).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("alert: alert of batch %s: %w", batchID, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("alert: alert of batch %s: %w", batchID, kernel.ErrNotFound)
	}
	return &out[0], nil
}

// AlertFilter selects alerts.
type AlertFilter struct {
	// State keeps the alerts in one state; "" keeps every state.
	State string
	// OwnKey, when not 0, keeps the alerts of batches created through that API key
	// only: what a send or read key may see (see CheckOwn).
	OwnKey int64
	// Source, DedupKey and Severity keep the alerts a monitoring tool posted through that
	// integration, with that key, of that severity; Label ("name=value") those with that
	// label. "" keeps all.
	Source, DedupKey, Severity, Label string
}

// labelPattern is what a label filter's name may be: it is written into a JSON path.
var labelPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,127}$`)

// Alerts lists the alerts f selects, open ones first, then the newest.
func (s *Ledger) Alerts(ctx context.Context, f AlertFilter, limit int) ([]Alert, error) {
	q := s.k.Reader(ctx).Model(&Alert{})
	if f.State != "" {
		q = q.Where("state = ?", f.State)
	}
	if f.OwnKey != 0 {
		q = q.Where("batch_id IN ("+models.OwnBatches+")", sql.Named("key", f.OwnKey))
	}
	for col, v := range map[string]string{"source": f.Source, "dedup_key": f.DedupKey, "severity": f.Severity} {
		if v != "" {
			q = q.Where(col+" = ?", v)
		}
	}
	if name, value, ok := strings.Cut(f.Label, "="); ok && labelPattern.MatchString(name) {
		extract := "json_extract(labels, ?)"
		if s.k.Dialect() == migrations.MySQL {
			extract = "JSON_VALUE(labels, ?)"
		}
		q = q.Where(extract+" = ?", `$."`+name+`"`, value)
	}
	var out []Alert
	err := q.Order(clause.Expr{SQL: "CASE WHEN state = ? THEN 0 ELSE 1 END", Vars: []any{AlertOpen}}).
		Order("opened_at DESC").Order("id DESC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("alert: alerts: %w", err)
	}
	return out, nil
}

// AlertCounts counts alerts by state.
func (s *Ledger) AlertCounts(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		State string
		N     int
	}
	if err := s.k.Reader(ctx).Model(&Alert{}).Select("state, COUNT(*) AS n").Group("state").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("alert: count alerts: %w", err)
	}
	out := make(map[string]int, len(AlertStates))
	for _, st := range AlertStates {
		out[st] = 0
	}
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}

// AlertSteps lists the steps of alerts, in the order they came due.
func (s *Ledger) AlertSteps(ctx context.Context, alertIDs ...int64) ([]AlertStep, error) {
	var out []AlertStep
	if len(alertIDs) == 0 {
		return nil, nil
	}
	if err := s.k.Reader(ctx).Where("alert_id IN ?", alertIDs).Order("alert_id, round, n").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("alert: alert steps: %w", err)
	}
	return out, nil
}

// AlertStepByID finds one step; ErrNotFound if there is none.
func (s *Ledger) AlertStepByID(ctx context.Context, id int64) (*AlertStep, error) {
	var out []AlertStep
	if err := s.k.Reader(ctx).Where("id = ?", id).Limit(1).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("alert: alert step %d: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("alert: alert step %d: %w", id, kernel.ErrNotFound)
	}
	return &out[0], nil
}

// DueAlertSteps lists steps due by now that have neither fired nor been cancelled, the
// most overdue first.
func (s *Ledger) DueAlertSteps(ctx context.Context, now time.Time, limit int) ([]AlertStep, error) {
	var out []AlertStep
	err := s.k.Reader(ctx).Where("fired_at IS NULL AND cancelled_at IS NULL AND due_at <= ?", now).
		Order("due_at").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("alert: due alert steps: %w", err)
	}
	return out, nil
}

// ClaimAlertStep marks a step fired at now, if it has neither fired nor been cancelled:
// the compare-and-set that makes a step fire once. false: it had.
func (s *Ledger) ClaimAlertStep(ctx context.Context, id int64, now time.Time) (bool, error) {
	res := s.k.Writer(ctx).Model(&AlertStep{}).Where("id = ? AND fired_at IS NULL AND cancelled_at IS NULL", id).
		Update("fired_at", now)
	if res.Error != nil {
		return false, fmt.Errorf("alert: claim alert step %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// RecordAlertStep records whom a fired step called and the batch of its notices, or
// why it called nobody.
func (s *Ledger) RecordAlertStep(ctx context.Context, id int64, targets []string, skippedReason, batchID string) error {
	err := s.k.Writer(ctx).Model(&AlertStep{}).Where("id = ?", id).
		Updates(map[string]any{"targets": templates.StringList(targets), "skipped_reason": skippedReason, "batch_id": batchID}).Error
	if err != nil {
		return fmt.Errorf("alert: record alert step %d: %w", id, err)
	}
	return nil
}

// AddAlertStep writes the next step of an alert.
func (s *Ledger) AddAlertStep(ctx context.Context, st *AlertStep) error {
	if err := s.k.Writer(ctx).Create(st).Error; err != nil {
		return fmt.Errorf("alert: add alert step: %w", err)
	}
	return nil
}

// PostponeAlertStep moves step s, not fired yet, to come due at until, saying why it
// waits, if it is still due when it was read: false when it moved meanwhile.
func (s *Ledger) PostponeAlertStep(ctx context.Context, st *AlertStep, until time.Time, reason string) (bool, error) {
	res := s.k.Writer(ctx).Model(&AlertStep{}).Where("id = ? AND fired_at IS NULL AND cancelled_at IS NULL AND due_at = ?", st.ID, st.DueAt).
		Updates(map[string]any{"due_at": until, "skipped_reason": reason})
	if res.Error != nil {
		return false, fmt.Errorf("alert: postpone alert step %d: %w", st.ID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// CancelAlertSteps cancels the steps of an alert not fired yet.
func (s *Ledger) CancelAlertSteps(ctx context.Context, alertID int64, now time.Time) error {
	err := s.k.Writer(ctx).Model(&AlertStep{}).Where("alert_id = ? AND fired_at IS NULL AND cancelled_at IS NULL", alertID).
		Update("cancelled_at", now).Error
	if err != nil {
		return fmt.Errorf("alert: cancel steps of alert %d: %w", alertID, err)
	}
	return nil
}

// MoveAlert changes an alert's columns if it is in one of the states from: the
// compare-and-set of every alert transition. false: it was not.
func (s *Ledger) MoveAlert(ctx context.Context, id int64, from []string, set map[string]any) (bool, error) {
	res := s.k.Writer(ctx).Model(&Alert{}).Where("id = ? AND state IN ?", id, from).Updates(set)
	if res.Error != nil {
		return false, fmt.Errorf("alert: move alert %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// MoveAlertAsRead changes an alert's columns if it is still in the state, step and round
// a was read with: the compare-and-set of a change decided on what was read. false: it
// moved meanwhile.
func (s *Ledger) MoveAlertAsRead(ctx context.Context, a *Alert, set map[string]any) (bool, error) {
	res := s.k.Writer(ctx).Model(&Alert{}).Where("id = ? AND state = ? AND step = ? AND round = ?", a.ID, a.State, a.Step, a.Round).Updates(set)
	if res.Error != nil {
		return false, fmt.Errorf("alert: move alert %d: %w", a.ID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// MarkSource records where an alert a monitoring tool posted came from: the
// integration, its dedup key, labels and severity, and its first event at at.
func (s *Ledger) MarkSource(ctx context.Context, id int64, source, dedupKey string, labels map[string]string, severity string, at time.Time) error {
	a := Alert{Source: source, DedupKey: dedupKey, Labels: labels, Severity: severity, EventCount: 1, LastEventAt: &at}
	err := s.k.Writer(ctx).Model(&Alert{ID: id}).Select("source", "dedup_key", "labels", "severity", "event_count", "last_event_at").Updates(&a).Error
	if err != nil {
		return fmt.Errorf("alert: source of alert %d: %w", id, err)
	}
	return nil
}

// CountEvent counts one more event of an alert that has not ended, a duplicate its tool
// posted at at; false when the alert has ended (resolved or exhausted).
func (s *Ledger) CountEvent(ctx context.Context, id int64, at time.Time) (bool, error) {
	res := s.k.Writer(ctx).Model(&Alert{}).Where("id = ? AND ended_at IS NULL", id).
		Updates(map[string]any{"event_count": gorm.Expr("event_count + 1"), "last_event_at": at})
	if res.Error != nil {
		return false, fmt.Errorf("alert: count event of alert %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// TakeNotices counts n more notices of alert id sent at now against its notice cap, in
// the hour that began with its first notice (a new hour begins once that one is over):
// the compare-and-set that keeps an alert within its cap however many steps fire at
// once. false: they would take it past its cap, and nothing is counted.
func (s *Ledger) TakeNotices(ctx context.Context, id int64, n int, now time.Time) (bool, error) {
	hourOver := "(notice_hour_at IS NULL OR notice_hour_at <= ?)"
	hourAgo := now.Add(-time.Hour)
	res := s.k.Writer(ctx).Model(&Alert{}).
		Where("id = ? AND (notice_cap = 0 OR ("+hourOver+" AND ? <= notice_cap) OR notice_count + ? <= notice_cap)", id, hourAgo, n, n).
		Updates(map[string]any{
			"notice_count":   gorm.Expr("CASE WHEN "+hourOver+" THEN ? ELSE notice_count + ? END", hourAgo, n, n),
			"notice_hour_at": gorm.Expr("CASE WHEN "+hourOver+" THEN ? ELSE notice_hour_at END", hourAgo, now),
		})
	if res.Error != nil {
		return false, fmt.Errorf("alert: count notices of alert %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// KeyHistory lists the alerts an integration opened for a dedup key since since, the
// newest first: how often the key opened and recovered.
func (s *Ledger) KeyHistory(ctx context.Context, source, dedupKey string, since time.Time, limit int) ([]Alert, error) {
	var out []Alert
	err := s.k.Reader(ctx).Where("source = ? AND dedup_key = ? AND opened_at >= ?", source, dedupKey, since).
		Order("opened_at DESC").Order("id DESC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("alert: history of key %s: %w", dedupKey, err)
	}
	return out, nil
}

// AlertViaRejection is how the alert of a rejected batch was resolved (its
// resolved_via): by the rejection, or by the expiry of the approval.
const AlertViaRejection = "rejection"

// AlertViaRecall is how an alert was resolved when one of its notices was recalled (its
// resolved_via): the text was taken back, so no one else is to be called with it.
const AlertViaRecall = "recall"

// ResolveRejectedAlert resolves the alert a rejected batch opened, if it is open or
// acknowledged, by by, via AlertViaRejection, and records its alert.resolved event for
// the key that opened it; run in the transaction of the rejection. It returns the alert
// as it was before, or nil when the batch opened none or it had ended already.
func (s *Ledger) ResolveRejectedAlert(ctx context.Context, batchID, by string, now time.Time) (*Alert, error) {
	a, err := s.AlertOfBatch(ctx, batchID)
	if errors.Is(err, kernel.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.endAlert(ctx, a, by, AlertViaRejection, now)
}

// ResolveRecalledAlert resolves alert id, if it is open or acknowledged, by by, via
// AlertViaRecall, its pending steps cancelled, and records its alert.resolved event for
// the key that opened it; run in the transaction of the recall. It returns the alert as
// it was before, or nil when it had ended already.
func (s *Ledger) ResolveRecalledAlert(ctx context.Context, id int64, by string, now time.Time) (*Alert, error) {
	a, err := s.AlertByID(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.endAlert(ctx, a, by, AlertViaRecall, now)
}

// endAlert resolves a, if it is resolvable (a compare-and-set), by by, via via, cancels
// its pending steps and records its alert.resolved event; nil when it had ended already.
func (s *Ledger) endAlert(ctx context.Context, a *Alert, by, via string, now time.Time) (*Alert, error) {
	set := map[string]any{"state": AlertResolved, "resolved_by": kernel.Truncate(by, 128), "resolved_via": via,
		"resolved_at": now, "ended_at": now}
	moved, err := s.MoveAlert(ctx, a.ID, AlertResolvable, set)
	if err != nil || !moved {
		return nil, err
	}
	if err := s.CancelAlertSteps(ctx, a.ID, now); err != nil {
		return nil, err
	}
	if a.CallbackKeyID != nil {
		e := AlertEvent{AlertID: a.ID, BatchID: a.BatchID, State: AlertResolved, Step: a.Step, Round: a.Round, By: by}
		if err := s.RecordAlertEvent(ctx, *a.CallbackKeyID, EventAlertResolved, e, now); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// AlertRecipients lists the people the messages of an alert went to, by id.
func (s *Ledger) AlertRecipients(ctx context.Context, alertID int64) ([]int64, error) {
	var ids []int64
	err := s.k.Writer(ctx).Model(&models.Message{}).Where("alert_id = ?", alertID).Distinct("recipient_id").Order("recipient_id").Pluck("recipient_id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("alert: recipients of alert %d: %w", alertID, err)
	}
	return ids, nil
}

// AlertNotices lists the messages that notified of an alert, whichever batch carries
// them (its own, its steps', Herald's own notices of it), oldest first, at most limit.
func (s *Ledger) AlertNotices(ctx context.Context, alertID int64, limit int) ([]models.Message, error) {
	var out []models.Message
	err := s.k.Reader(ctx).Where("alert_id = ?", alertID).Order("created_at, id").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("alert: notices of alert %d: %w", alertID, err)
	}
	return out, nil
}

// AlertEvent is what an alert's status callback event says of it.
type AlertEvent struct {
	AlertID int64
	BatchID string
	// State is the alert's state after the change.
	State string
	// Step and Round are the step the alert had reached and its round (from 1; 0
	// before the first step).
	Step, Round int
	// By is who acknowledged or resolved it; empty for the other events.
	By string
}

// RecordAlertEvent writes an alert's status callback event for the API key that opened
// it.
func (s *Ledger) RecordAlertEvent(ctx context.Context, keyID int64, typ string, ae AlertEvent, now time.Time) error {
	e := models.NewEvent(keyID, typ, nil, ae.BatchID, ae.State, "", now)
	e.AlertID, e.AlertStep, e.AlertRound, e.AlertBy = &ae.AlertID, &ae.Step, &ae.Round, ae.By
	if err := s.k.Writer(ctx).Create(&e).Error; err != nil {
		return fmt.Errorf("alert: record alert event: %w", err)
	}
	return nil
}

// CountOpenAlerts counts the alerts nobody has acknowledged yet.
func (s *Ledger) CountOpenAlerts(ctx context.Context) (int, error) {
	var n int64
	if err := s.k.Reader(ctx).Model(&Alert{}).Where("state = ?", AlertOpen).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("alert: count open alerts: %w", err)
	}
	return int(n), nil
}

// CountUnroutedAlerts counts the open alerts whose latest fired step (or closing check)
// called nobody: the alarm of alerts nobody is being called for.
func (s *Ledger) CountUnroutedAlerts(ctx context.Context) (int, error) {
	var n int64
	err := s.k.Reader(ctx).Model(&Alert{}).Where("state = ?", AlertOpen).
		Where(`EXISTS (SELECT 1 FROM alert_steps s WHERE s.alert_id = alerts.id AND s.fired_at IS NOT NULL AND s.skipped_reason <> ''
			AND NOT EXISTS (SELECT 1 FROM alert_steps t WHERE t.alert_id = s.alert_id AND t.fired_at IS NOT NULL
				AND (t.round > s.round OR (t.round = s.round AND t.n > s.n))))`).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("alert: count unrouted alerts: %w", err)
	}
	return int(n), nil
}

// EndExpiredBatch resolves the alert a batch whose approval expired opened, if any
// (ResolveRejectedAlert), audited as alert.resolve by the expiry's actor (expiry is the
// batch's own entry): ExpireApprovals' BatchEnded.
func EndExpiredBatch(ctx context.Context, tx *models.Store, batchID string, expiry audit.Entry, now time.Time) error {
	a, err := Of(tx).ResolveRejectedAlert(ctx, batchID, expiry.Actor, now)
	if err != nil || a == nil {
		return err
	}
	alertID := strconv.FormatInt(a.ID, 10)
	ended := audit.Entry{Actor: expiry.Actor, ActorType: expiry.ActorType, Action: "alert.resolve", TargetType: "alert", TargetID: alertID}.
		WithParams(audit.Params{"id": alertID, "by": expiry.Actor, "via": AlertViaRejection, "note": models.ApprovalExpired})
	return tx.AuditLog().Write(ctx, ended)
}
