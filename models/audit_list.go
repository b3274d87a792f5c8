package models

import (
	"context"
	"fmt"
	"time"

	"herald/kernel"
)

// AuditFilter selects audit log entries; zero fields do not filter.
type AuditFilter struct {
	Actor string
	// Action matches the action or, ending in ".", every action under it ("template.").
	Action string
	// Target matches the target's id or its type.
	Target string
	// From and Before bound the time: From <= at < Before.
	From, Before *time.Time
	// BeforeID continues the list below an entry id (keyset pagination, newest first).
	BeforeID int64
}

// ListAudit lists audit entries matching a filter, newest first, at most limit of them.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter, limit int) ([]AuditEntry, error) {
	q := s.reader(ctx).Model(&AuditEntry{})
	if f.Actor != "" {
		q = q.Where("actor = ?", f.Actor)
	}
	switch {
	case f.Action == "":
	case f.Action[len(f.Action)-1] == '.':
		q = kernel.WhereLike(q, kernel.LikePrefix, f.Action, "action")
	default:
		q = q.Where("action = ?", f.Action)
	}
	if f.Target != "" {
		q = q.Where("(target_id = ? OR target_type = ?)", f.Target, f.Target)
	}
	// SQLite compares times as text: every stored time is UTC.
	if f.From != nil {
		q = q.Where("at >= ?", f.From.UTC())
	}
	if f.Before != nil {
		q = q.Where("at < ?", f.Before.UTC())
	}
	if f.BeforeID > 0 {
		q = q.Where("id < ?", f.BeforeID)
	}
	var out []AuditEntry
	if err := q.Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("models: list audit log: %w", err)
	}
	return out, nil
}
