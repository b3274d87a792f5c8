package incident

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"herald/alert"
	"herald/kernel"
	"herald/models"
)

// Casebook is the incidents' data, on the database of a message store (or its
// transaction).
type Casebook struct {
	// k is the database, or the database bound to a transaction.
	k *kernel.DB
}

// Of is the incidents' store on the database of m, in its transaction when m is bound
// to one.
func Of(m *models.Store) *Casebook { return &Casebook{k: m.DB()} }

// Joinable finds the incident alerts of an integration's group key may join (by its
// open key); nil when there is none.
func (s *Casebook) Joinable(ctx context.Context, openKey string) (*Incident, error) {
	var out []Incident
	if err := s.k.Writer(ctx).Where("open_key = ?", openKey).Limit(1).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("incident: incident of %s: %w", openKey, err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return &out[0], nil
}

// Create writes a new incident; kernel.ErrDuplicate when another took its open key first.
func (s *Casebook) Create(ctx context.Context, in *Incident) error {
	if err := s.k.Writer(ctx).Create(in).Error; err != nil {
		if kernel.IsDuplicate(err) {
			return fmt.Errorf("incident: open key taken: %w", kernel.ErrDuplicate)
		}
		return fmt.Errorf("incident: create incident: %w", err)
	}
	return nil
}

// Close lets an incident's open key go (its window passed, or it ended), if it still
// holds openKey: later alerts of the key open a new incident.
func (s *Casebook) Close(ctx context.Context, id int64, openKey string) error {
	err := s.k.Writer(ctx).Model(&Incident{}).Where("id = ? AND open_key = ?", id, openKey).Update("open_key", nil).Error
	if err != nil {
		return fmt.Errorf("incident: close incident %d: %w", id, err)
	}
	return nil
}

// Delete removes an incident whose first alert could not open.
func (s *Casebook) Delete(ctx context.Context, id int64) error {
	if err := s.k.Writer(ctx).Delete(&Incident{}, id).Error; err != nil {
		return fmt.Errorf("incident: delete incident %d: %w", id, err)
	}
	return nil
}

// SetLead records an incident's first alert.
func (s *Casebook) SetLead(ctx context.Context, id, alertID int64) error {
	if err := s.k.Writer(ctx).Model(&Incident{}).Where("id = ?", id).Update("alert_id", alertID).Error; err != nil {
		return fmt.Errorf("incident: lead of incident %d: %w", id, err)
	}
	return nil
}

// Join puts alert alertID in incident id and counts it; it returns the incident's
// count of alerts after.
func (s *Casebook) Join(ctx context.Context, id, alertID int64) (int, error) {
	var n int
	err := s.k.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Model(&alert.Alert{}).Where("id = ?", alertID).Update("incident_id", id).Error; err != nil {
			return err
		}
		if err := tx.Model(&Incident{}).Where("id = ?", id).Update("alert_count", gorm.Expr("alert_count + 1")).Error; err != nil {
			return err
		}
		return tx.Model(&Incident{}).Where("id = ?", id).Pluck("alert_count", &n).Error
	})
	if err != nil {
		return 0, fmt.Errorf("incident: join incident %d: %w", id, err)
	}
	return n, nil
}

// MarkStorm records that incident id sent its storm notice at now, if it had not: the
// compare-and-set that makes the notice one. false: it had.
func (s *Casebook) MarkStorm(ctx context.Context, id int64, now time.Time) (bool, error) {
	res := s.k.Writer(ctx).Model(&Incident{}).Where("id = ? AND storm_at IS NULL", id).Update("storm_at", now)
	if res.Error != nil {
		return false, fmt.Errorf("incident: storm of incident %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// Move changes an incident's columns if it is in one of the states from: the
// compare-and-set of every incident transition. false: it was not.
func (s *Casebook) Move(ctx context.Context, id int64, from []string, set map[string]any) (bool, error) {
	res := s.k.Writer(ctx).Model(&Incident{}).Where("id = ? AND state IN ?", id, from).Updates(set)
	if res.Error != nil {
		return false, fmt.Errorf("incident: move incident %d: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// ByID finds an incident; kernel.ErrNotFound if there is none.
func (s *Casebook) ByID(ctx context.Context, id int64) (*Incident, error) {
	var out []Incident
	if err := s.k.Reader(ctx).Where("id = ?", id).Limit(1).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("incident: incident %d: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("incident: incident %d: %w", id, kernel.ErrNotFound)
	}
	return &out[0], nil
}

// Filter selects incidents.
type Filter struct {
	// State keeps the incidents in one state; "" keeps all.
	State string
	// BeforeID keeps those older than incident BeforeID (a page's cursor); 0 keeps all.
	BeforeID int64
}

// List lists the incidents f selects, the newest first.
func (s *Casebook) List(ctx context.Context, f Filter, limit int) ([]Incident, error) {
	q := s.k.Reader(ctx).Model(&Incident{})
	if f.State != "" {
		q = q.Where("state = ?", f.State)
	}
	if f.BeforeID > 0 {
		q = q.Where("id < ?", f.BeforeID)
	}
	var out []Incident
	if err := q.Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("incident: incidents: %w", err)
	}
	return out, nil
}

// Alerts lists the alerts of incidents, the first of each first, at most limit.
func (s *Casebook) Alerts(ctx context.Context, limit int, ids ...int64) ([]alert.Alert, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []alert.Alert
	if err := s.k.Reader(ctx).Where("incident_id IN ?", ids).Order("incident_id DESC, id").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("incident: alerts of incidents: %w", err)
	}
	return out, nil
}

// CountUnended counts the alerts of incident id that have not ended.
func (s *Casebook) CountUnended(ctx context.Context, id int64) (int, error) {
	var n int64
	if err := s.k.Writer(ctx).Model(&alert.Alert{}).Where("incident_id = ? AND ended_at IS NULL", id).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("incident: open alerts of incident %d: %w", id, err)
	}
	return int(n), nil
}

// MarkFlapping marks alert id flapping.
func (s *Casebook) MarkFlapping(ctx context.Context, id int64) error {
	if err := s.k.Writer(ctx).Model(&alert.Alert{}).Where("id = ?", id).Update("flapping", true).Error; err != nil {
		return fmt.Errorf("incident: flapping alert %d: %w", id, err)
	}
	return nil
}
