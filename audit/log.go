package audit

import (
	"context"
	"fmt"
	"time"

	"herald/kernel"
)

// rows writes audit entries in one multi-row INSERT.
var rows = kernel.NewModelRows[Entry]("audit_log")

// Insert writes audit entries on w, each at now when it has no time, with its values
// cut to their columns and any URL's credentials and query left out (see Redact): the
// writes of a domain's own transaction or script that audit beside their rows.
func Insert(w kernel.RowWriter, entries ...*Entry) error {
	now := kernel.Now()
	for _, e := range entries {
		if e.At.IsZero() {
			e.At = now
		}
		e.Fit()
	}
	return rows.Insert(w, entries)
}

// Log is the audit log of a database, or of a database bound to a transaction.
type Log struct{ db *kernel.DB }

// NewLog is the audit log of db.
func NewLog(db *kernel.DB) *Log { return &Log{db: db} }

// Write appends an entry to the audit log.
func (l *Log) Write(ctx context.Context, e Entry) error {
	if err := Insert(kernel.OnTx(l.db.Writer(ctx)), &e); err != nil {
		return fmt.Errorf("audit: audit %s: %w", e.Action, err)
	}
	return nil
}

// WriteMany appends several entries in one statement: a bulk change writes one entry per
// thing it changed, so the log answers "who changed E1001, when, from where".
func (l *Log) WriteMany(ctx context.Context, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	list := make([]*Entry, len(entries))
	for i := range entries {
		list[i] = &entries[i]
	}
	if err := Insert(kernel.OnTx(l.db.Writer(ctx)), list...); err != nil {
		return fmt.Errorf("audit: audit %d entries: %w", len(entries), err)
	}
	return nil
}

// Filter selects audit log entries; zero fields do not filter.
type Filter struct {
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

// List lists audit entries matching a filter, newest first, at most limit of them.
func (l *Log) List(ctx context.Context, f Filter, limit int) ([]Entry, error) {
	q := l.db.Reader(ctx).Model(&Entry{})
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
	var out []Entry
	if err := q.Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("audit: list audit log: %w", err)
	}
	return out, nil
}

// Once appends an audit entry unless an entry with the same key was appended in the
// current window of length per; it reports whether it wrote. It records events that
// anyone can repeat at will, such as a wrong API key, without letting them flood the log.
func (l *Log) Once(ctx context.Context, e Entry, key string, per time.Duration) (bool, error) {
	key, start := "audit "+key, kernel.Now().Truncate(per)
	ok, err := l.db.TakeHit(ctx, key, start, 1)
	if err != nil || !ok {
		return false, err
	}
	if err := l.Write(ctx, e); err != nil {
		// Let the next event of the window try again.
		_ = l.db.GiveBackHit(context.WithoutCancel(ctx), key, start)
		return false, err
	}
	return true, nil
}
