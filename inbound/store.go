package inbound

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"herald/kernel"
)

// Inbox holds the integrations, what came in through them, and the open alert of each
// dedup key; safe for concurrent use.
type Inbox struct {
	// k is the database, or the database bound to a transaction (On).
	k *kernel.DB
}

// NewStore is the integrations' store on k.
func NewStore(k *kernel.DB) *Inbox { return &Inbox{k: k} }

// On is the store on tx, the database bound to a transaction (kernel.DB.InTx).
func (s *Inbox) On(tx *kernel.DB) *Inbox { return &Inbox{k: tx} }

// Integrations lists the integrations by name.
func (s *Inbox) Integrations(ctx context.Context) ([]Integration, error) {
	var out []Integration
	if err := s.k.Reader(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("inbound: integrations: %w", err)
	}
	return out, nil
}

// IntegrationByName reads one integration; kernel.ErrNotFound when there is none.
func (s *Inbox) IntegrationByName(ctx context.Context, name string) (*Integration, error) {
	var it Integration
	err := s.k.Reader(ctx).Where("name = ?", name).Take(&it).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, kernel.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("inbound: integration %q: %w", name, err)
	}
	return &it, nil
}

// CreateIntegration writes a new integration; a name in use is a field error on name.
func (s *Inbox) CreateIntegration(ctx context.Context, it *Integration) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	it.CreatedAt, it.UpdatedAt = now, now
	err := s.k.Writer(ctx).Create(it).Error
	if kernel.IsDuplicate(err) {
		return kernel.DuplicateField("name", "integrations.invalid.name_taken")
	}
	if err != nil {
		return fmt.Errorf("inbound: create integration %q: %w", it.Name, err)
	}
	return nil
}

// UpdateIntegration replaces the routes and settings of the integration called name
// (its name, format and token stay); kernel.ErrNotFound when there is none.
func (s *Inbox) UpdateIntegration(ctx context.Context, it *Integration) error {
	it.UpdatedAt = time.Now().UTC().Truncate(time.Microsecond)
	res := s.k.Writer(ctx).Model(&Integration{}).Where("id = ?", it.ID).Select("routes", "default_route",
		"notify_on_resolve", "language", "mapping", "value_map", "updated_at").Updates(it)
	if res.Error != nil {
		return fmt.Errorf("inbound: update integration %q: %w", it.Name, res.Error)
	}
	if res.RowsAffected == 0 {
		return kernel.ErrNotFound
	}
	return nil
}

// SetToken replaces an integration's token hash; kernel.ErrNotFound when there is none.
func (s *Inbox) SetToken(ctx context.Context, id int64, hash string) error {
	res := s.k.Writer(ctx).Model(&Integration{}).Where("id = ?", id).
		Updates(map[string]any{"token_hash": hash, "updated_at": time.Now().UTC()})
	if res.Error != nil {
		return fmt.Errorf("inbound: token of integration %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return kernel.ErrNotFound
	}
	return nil
}

// DeleteIntegration removes an integration with what came in through it and its keys;
// the alerts it opened stay. kernel.ErrNotFound when there is none.
func (s *Inbox) DeleteIntegration(ctx context.Context, id int64) error {
	return s.k.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Where("id = ?", id).Delete(&Integration{})
		if res.Error != nil {
			return fmt.Errorf("inbound: delete integration %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return kernel.ErrNotFound
		}
		if err := tx.Where("integration_id = ?", id).Delete(&Received{}).Error; err != nil {
			return fmt.Errorf("inbound: delete events of integration %d: %w", id, err)
		}
		if err := tx.Where("integration_id = ?", id).Delete(&OpenKey{}).Error; err != nil {
			return fmt.Errorf("inbound: delete keys of integration %d: %w", id, err)
		}
		return nil
	})
}

// Received is one event an integration received, and what became of it.
type Received struct {
	ID            int64
	IntegrationID int64
	ReceivedAt    time.Time
	Outcome       string
	Reason        string
	DedupKey      string
	AlertID       *int64
	// Body is the start of the body it came in (MaxKeptBody), secrets redacted.
	Body string
}

// TableName implements gorm's tabler.
func (Received) TableName() string { return "inbound_events" }

// What became of an event.
const (
	OutcomeCreated      = "created"
	OutcomeDeduplicated = "deduplicated"
	OutcomeResolved     = "resolved"
	OutcomeUnrouted     = "unrouted"
	OutcomeIgnored      = "ignored"
	OutcomeRefused      = "refused"
)

// Outcomes lists what may become of an event.
var Outcomes = []string{OutcomeCreated, OutcomeDeduplicated, OutcomeResolved, OutcomeUnrouted, OutcomeIgnored, OutcomeRefused}

// MaxKeptBody is how much of a body the list of what came in keeps.
const MaxKeptBody = 8 << 10

// KeptEvents is how many events of an integration the list of what came in keeps.
const KeptEvents = 200

// Record writes what became of events an integration received, and keeps the newest
// KeptEvents of them.
func (s *Inbox) Record(ctx context.Context, integrationID int64, events []Received) error {
	if len(events) == 0 {
		return nil
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i := range events {
		events[i].IntegrationID = integrationID
		if events[i].ReceivedAt.IsZero() {
			events[i].ReceivedAt = now
		}
		events[i].Body = kernel.Truncate(events[i].Body, MaxKeptBody)
		events[i].Reason = kernel.Truncate(events[i].Reason, 255)
		events[i].DedupKey = kernel.Truncate(events[i].DedupKey, 255)
	}
	return s.k.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(&events).Error; err != nil {
			return fmt.Errorf("inbound: record events of integration %d: %w", integrationID, err)
		}
		// The list is cut back now and then, not at every event: it holds a few more
		// than KeptEvents for a while, and Events shows the newest KeptEvents.
		if !crossesTrim(events) {
			return nil
		}
		var cut int64
		err := tx.Model(&Received{}).Where("integration_id = ?", integrationID).Order("id DESC").
			Offset(KeptEvents).Limit(1).Pluck("id", &cut).Error
		if err != nil || cut == 0 {
			return err
		}
		return tx.Where("integration_id = ? AND id <= ?", integrationID, cut).Delete(&Received{}).Error
	})
}

// trimEvery is how many events apart the list of what came in is cut back.
const trimEvery = 20

// crossesTrim reports whether the events just written reach a multiple of trimEvery.
func crossesTrim(events []Received) bool {
	first, last := events[0].ID, events[len(events)-1].ID
	return len(events) >= trimEvery || first/trimEvery != last/trimEvery || last%trimEvery == 0
}

// LastEvent is when an integration last received an event; nil when it has received
// none.
func (s *Inbox) LastEvent(ctx context.Context, integrationID int64) (*time.Time, error) {
	var last Received
	err := s.k.Reader(ctx).Select("received_at").Where("integration_id = ?", integrationID).Order("id DESC").Take(&last).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inbound: last event of integration %d: %w", integrationID, err)
	}
	return &last.ReceivedAt, nil
}

// Events lists what an integration received, newest first, at most limit.
func (s *Inbox) Events(ctx context.Context, integrationID int64, limit int) ([]Received, error) {
	var out []Received
	err := s.k.Reader(ctx).Where("integration_id = ?", integrationID).Order("id DESC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("inbound: events of integration %d: %w", integrationID, err)
	}
	return out, nil
}

// OpenKey is the open alert of an integration's dedup key (inbound_keys).
type OpenKey struct {
	IntegrationID int64  `gorm:"primaryKey;autoIncrement:false"`
	DedupKey      string `gorm:"primaryKey"`
	AlertID       *int64
	CreatedAt     time.Time
}

// TableName implements gorm's tabler.
func (OpenKey) TableName() string { return "inbound_keys" }

// TakeKey claims an integration's dedup key for a new alert, in the caller's
// transaction: true when this caller took it (and opens the alert), false when an alert
// of the key is open already (its id, or nil while the taker has not written it yet).
func (s *Inbox) TakeKey(ctx context.Context, integrationID int64, key string) (bool, *int64, error) {
	row := OpenKey{IntegrationID: integrationID, DedupKey: key, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	res := s.k.Writer(ctx).Clauses(clause.OnConflict{DoNothing: true}).Create(&row)
	if res.Error != nil {
		return false, nil, fmt.Errorf("inbound: take key %q: %w", key, res.Error)
	}
	if res.RowsAffected == 1 {
		return true, nil, nil
	}
	var held OpenKey
	err := s.k.Writer(ctx).Where("integration_id = ? AND dedup_key = ?", integrationID, key).Take(&held).Error
	if err != nil {
		return false, nil, fmt.Errorf("inbound: read key %q: %w", key, err)
	}
	return false, held.AlertID, nil
}

// KeyAlert reads the open alert of an integration's dedup key: found false when the key
// is not taken, alertID nil while its taker has not written the alert yet.
func (s *Inbox) KeyAlert(ctx context.Context, integrationID int64, key string) (alertID *int64, found bool, err error) {
	var held OpenKey
	err = s.k.Writer(ctx).Where("integration_id = ? AND dedup_key = ?", integrationID, key).Take(&held).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("inbound: read key %q: %w", key, err)
	}
	return held.AlertID, true, nil
}

// SetKeyAlert records the alert a taken key opened.
func (s *Inbox) SetKeyAlert(ctx context.Context, integrationID int64, key string, alertID int64) error {
	err := s.k.Writer(ctx).Model(&OpenKey{}).Where("integration_id = ? AND dedup_key = ?", integrationID, key).
		Update("alert_id", alertID).Error
	if err != nil {
		return fmt.Errorf("inbound: key %q: %w", key, err)
	}
	return nil
}

// ReleaseKey lets an integration's dedup key go once its alert ended: the next event
// of the key opens a new alert.
func (s *Inbox) ReleaseKey(ctx context.Context, integrationID int64, key string) error {
	err := s.k.Writer(ctx).Where("integration_id = ? AND dedup_key = ?", integrationID, key).Delete(&OpenKey{}).Error
	if err != nil {
		return fmt.Errorf("inbound: release key %q: %w", key, err)
	}
	return nil
}
