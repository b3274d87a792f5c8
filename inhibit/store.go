// Package inhibit is inhibition: rules that say an open alert (the source, say a
// critical DBDown) mutes the alerts it causes (the targets, its warnings) while they
// share the values of some labels (equal, say cluster). An alert opened while a source
// inhibits it is recorded as inhibited: nothing is sent and it does not escalate. When
// its source ends, it is released: its escalation starts, at once. Rulebook holds the
// rules and the inhibitions, Referee their audited changes and the release.
package inhibit

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"herald/delivery"
	"herald/internal/states"
	"herald/kernel"
	"herald/models"
)

// Rule is one inhibition rule.
type Rule struct {
	ID     int64
	Name   string
	Source []delivery.Matcher `gorm:"serializer:json"`
	Target []delivery.Matcher `gorm:"serializer:json"`
	// Equal names the labels whose values a source and its target share.
	Equal     []string `gorm:"column:equal_labels;serializer:json"`
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TableName implements gorm's tabler.
func (Rule) TableName() string { return "inhibit_rules" }

// States of an inhibition: inhibited → released (its source ended: it escalates) or
// ended (it ended first).
const (
	StateInhibited = "inhibited"
	StateReleased  = "released"
	StateEnded     = "ended"
)

// inhibitionTable is an inhibition's lifecycle; every move is a compare-and-set on it.
var inhibitionTable = states.New([]string{StateInhibited, StateReleased, StateEnded},
	map[string][]string{StateInhibited: {StateReleased, StateEnded}})

// Inhibition records that an alert was opened inhibited: by which rule, which alert
// inhibits it, and whether it still is.
type Inhibition struct {
	AlertID       int64 `gorm:"primaryKey;autoIncrement:false"`
	RuleID        int64
	RuleName      string
	SourceAlertID int64
	State         string
	InhibitedAt   time.Time
	ReleasedAt    *time.Time
}

// TableName implements gorm's tabler.
func (Inhibition) TableName() string { return "alert_inhibitions" }

// Rulebook is the inhibition data, on the database of a message store (or its
// transaction).
type Rulebook struct {
	k *kernel.DB
}

// Of is the inhibition store on the database of m, in its transaction when m is bound to
// one.
func Of(m *models.Store) *Rulebook { return &Rulebook{k: m.DB()} }

// Rules lists the rules by name.
func (s *Rulebook) Rules(ctx context.Context) ([]Rule, error) {
	var out []Rule
	if err := s.k.Reader(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("inhibit: rules: %w", err)
	}
	return out, nil
}

// RuleByID finds a rule; kernel.ErrNotFound if there is none.
func (s *Rulebook) RuleByID(ctx context.Context, id int64) (*Rule, error) {
	var r Rule
	if err := s.k.Reader(ctx).Where("id = ?", id).First(&r).Error; err != nil {
		return nil, fmt.Errorf("inhibit: rule %d: %w", id, kernel.NotFound(err))
	}
	return &r, nil
}

// CreateRule saves a new rule; a name taken is a field error on name.
func (s *Rulebook) CreateRule(ctx context.Context, r *Rule) error {
	now := kernel.Now()
	r.CreatedAt, r.UpdatedAt = now, now
	if err := s.k.Writer(ctx).Create(r).Error; err != nil {
		if kernel.IsDuplicate(err) {
			return kernel.DuplicateField("name", "inhibit.check.name_taken")
		}
		return fmt.Errorf("inhibit: create rule: %w", err)
	}
	return nil
}

// UpdateRule replaces a rule's name, matchers and labels; kernel.ErrNotFound if it is
// gone.
func (s *Rulebook) UpdateRule(ctx context.Context, r *Rule) error {
	r.UpdatedAt = kernel.Now()
	res := s.k.Writer(ctx).Model(r).Select("name", "source", "target", "equal_labels", "updated_at").Updates(r)
	if res.Error != nil {
		if kernel.IsDuplicate(res.Error) {
			return kernel.DuplicateField("name", "inhibit.check.name_taken")
		}
		return fmt.Errorf("inhibit: update rule %d: %w", r.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("inhibit: rule %d: %w", r.ID, kernel.ErrNotFound)
	}
	return nil
}

// DeleteRule removes a rule; the alerts it inhibits stay so until their sources end.
func (s *Rulebook) DeleteRule(ctx context.Context, id int64) error {
	res := s.k.Writer(ctx).Where("id = ?", id).Delete(&Rule{})
	if res.Error != nil {
		return fmt.Errorf("inhibit: delete rule %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("inhibit: rule %d: %w", id, kernel.ErrNotFound)
	}
	return nil
}

// Record writes an inhibition of an alert being opened.
func (s *Rulebook) Record(ctx context.Context, in *Inhibition) error {
	in.State = StateInhibited
	if err := s.k.Writer(ctx).Create(in).Error; err != nil {
		return fmt.Errorf("inhibit: record inhibition of alert %d: %w", in.AlertID, err)
	}
	return nil
}

// Inhibitions returns the inhibitions of the alerts ids (those it has), by alert id.
func (s *Rulebook) Inhibitions(ctx context.Context, ids []int64) (map[int64]Inhibition, error) {
	out := map[int64]Inhibition{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []Inhibition
	if err := s.k.Reader(ctx).Where("alert_id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("inhibit: inhibitions: %w", err)
	}
	for _, r := range rows {
		out[r.AlertID] = r
	}
	return out, nil
}

// Settleable lists the inhibitions still in force whose source or own alert has ended
// (resolved or exhausted): of the source sourceID alone when it is not 0.
func (s *Rulebook) Settleable(ctx context.Context, sourceID int64) ([]Inhibition, error) {
	var out []Inhibition
	q := s.k.Reader(ctx).Table("alert_inhibitions AS i").Select("i.*").
		Joins("JOIN alerts src ON src.id = i.source_alert_id JOIN alerts a ON a.id = i.alert_id").
		Where("i.state = ? AND (src.ended_at IS NOT NULL OR a.ended_at IS NOT NULL)", StateInhibited)
	if sourceID != 0 {
		q = q.Where("i.source_alert_id = ?", sourceID)
	}
	if err := q.Order("i.alert_id").Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("inhibit: inhibitions to settle: %w", err)
	}
	return out, nil
}

// Move moves an inhibition from inhibited to state to at now (a compare-and-set:
// kernel.ErrStateChanged means another process moved it first).
func (s *Rulebook) Move(ctx context.Context, alertID int64, to string, now time.Time) error {
	res := s.k.Writer(ctx).Model(&Inhibition{}).Where("alert_id = ? AND state IN ?", alertID, inhibitionTable.From(to)).
		Updates(map[string]any{"state": to, "released_at": now.UTC()})
	return moved(res, alertID)
}

// Reassign makes another open alert the source of an inhibition still in force (a
// compare-and-set on its source).
func (s *Rulebook) Reassign(ctx context.Context, alertID, from, to int64) error {
	res := s.k.Writer(ctx).Model(&Inhibition{}).Where("alert_id = ? AND state = ? AND source_alert_id = ?", alertID, StateInhibited, from).
		Update("source_alert_id", to)
	return moved(res, alertID)
}

func moved(res *gorm.DB, alertID int64) error {
	if res.Error != nil {
		return fmt.Errorf("inhibit: move inhibition of alert %d: %w", alertID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("inhibit: move inhibition of alert %d: %w", alertID, kernel.ErrStateChanged)
	}
	return nil
}

// OpenSource is an open alert as a rule's source sees it.
type OpenSource struct {
	ID       int64
	Source   string
	Severity string
	Labels   map[string]string `gorm:"serializer:json"`
}

// OpenAlerts lists the alerts that have not ended and came from an integration (those
// that have labels to match), oldest first, except the alert except.
func (s *Rulebook) OpenAlerts(ctx context.Context, except int64) ([]OpenSource, error) {
	var out []OpenSource
	err := s.k.Reader(ctx).Table("alerts").Select("id, source, severity, labels").
		Where("ended_at IS NULL AND source <> '' AND id <> ?", except).Order("id").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("inhibit: open alerts: %w", err)
	}
	return out, nil
}
