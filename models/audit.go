package models

import (
	"context"
	"fmt"
	"time"
)

// AuditEntry records one state-changing action: who, what, when and from where.
type AuditEntry struct {
	ID         int64
	At         time.Time
	Actor      string
	ActorType  string // "user", "api_key" or "system"
	Action     string
	TargetType string
	TargetID   string
	Detail     string
	IP         string
}

// TableName implements gorm's tabler.
func (AuditEntry) TableName() string { return "audit_log" }

// Audit appends an entry to the audit log.
func (s *Store) Audit(ctx context.Context, e AuditEntry) error {
	if e.At.IsZero() {
		e.At = Now()
	}
	// Cut to the columns' sizes: some values come from outside (a username tried, a
	// path requested), and an over-long one must not cost the entry.
	e.Actor, e.Action, e.TargetType = truncate(e.Actor, 100), truncate(e.Action, 64), truncate(e.TargetType, 32)
	e.TargetID, e.IP = truncate(e.TargetID, 64), truncate(e.IP, 64)
	if err := s.db.WithContext(ctx).Create(&e).Error; err != nil {
		return fmt.Errorf("models: audit %s: %w", e.Action, err)
	}
	return nil
}

// AuditMany appends several entries in one statement: a bulk change writes one entry per
// thing it changed, so the log answers "who changed E1001, when, from where".
func (s *Store) AuditMany(ctx context.Context, entries []AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	now := Now()
	for i := range entries {
		if entries[i].At.IsZero() {
			entries[i].At = now
		}
	}
	if err := s.db.WithContext(ctx).CreateInBatches(entries, insertChunk).Error; err != nil {
		return fmt.Errorf("models: audit %d entries: %w", len(entries), err)
	}
	return nil
}
