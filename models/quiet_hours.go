package models

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"
)

// ErrorClassQuietHours marks a message that waits for its account's quiet hours to end:
// pending, due at the end, with no attempt used.
const ErrorClassQuietHours = "quiet_hours"

// QuietHours is a daily window, in HERALD_TIMEZONE, in which an account sends only
// high-priority messages: normal and low ones wait until it ends. Start and End are
// HH:MM; a window whose end is earlier than its start runs over midnight (20:00–08:00).
// The zero value is no window. It is stored as "HH:MM-HH:MM" ("" for none).
type QuietHours struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// Set reports whether the account has quiet hours.
func (q QuietHours) Set() bool { return q.Start != "" || q.End != "" }

// Validate checks both times; an error names quiet_hours.start or quiet_hours.end.
func (q QuietHours) Validate() error {
	if !q.Set() {
		return nil
	}
	start, ok := minuteOfDay(q.Start)
	if !ok {
		return Invalid("quiet_hours.start", "accounts.quiet.error_time")
	}
	end, ok := minuteOfDay(q.End)
	if !ok {
		return Invalid("quiet_hours.end", "accounts.quiet.error_time")
	}
	if start == end {
		return Invalid("quiet_hours.end", "accounts.quiet.error_same")
	}
	return nil
}

// minuteOfDay reads HH:MM (00:00 to 23:59).
func minuteOfDay(s string) (int, bool) {
	t, err := time.Parse("15:04", s)
	if err != nil || len(s) != 5 {
		return 0, false
	}
	return t.Hour()*60 + t.Minute(), true
}

// Holds reports whether a message of the priority, due at now, must wait for the
// window to end, and when it ends. High priority never waits.
func (q QuietHours) Holds(p Priority, now time.Time, loc *time.Location) (bool, time.Time) {
	if p == PriorityHigh || q.Validate() != nil || !q.Set() {
		return false, time.Time{}
	}
	start, _ := minuteOfDay(q.Start)
	end, _ := minuteOfDay(q.End)
	local := now.In(loc)
	minute := local.Hour()*60 + local.Minute()
	var inside bool
	if start < end {
		inside = minute >= start && minute < end
	} else {
		inside = minute >= start || minute < end
	}
	if !inside {
		return false, time.Time{}
	}
	midnight := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)
	until := midnight.Add(time.Duration(end) * time.Minute)
	if !until.After(local) {
		until = time.Date(local.Year(), local.Month(), local.Day()+1, 0, 0, 0, 0, loc).Add(time.Duration(end) * time.Minute)
	}
	return true, until.UTC()
}

// Value implements driver.Valuer.
func (q QuietHours) Value() (driver.Value, error) {
	if !q.Set() {
		return "", nil
	}
	return q.Start + "-" + q.End, nil
}

// Scan implements sql.Scanner.
func (q *QuietHours) Scan(v any) error {
	var s string
	switch x := v.(type) {
	case nil:
	case string:
		s = x
	case []byte:
		s = string(x)
	default:
		return fmt.Errorf("models: quiet hours from %T", v)
	}
	*q = QuietHours{}
	if s == "" {
		return nil
	}
	start, end, ok := strings.Cut(s, "-")
	if !ok {
		return fmt.Errorf("models: quiet hours %q", s)
	}
	q.Start, q.End = start, end
	return nil
}

// QuietWaiting counts a batch's messages that wait for their account's quiet hours to end.
func (s *Store) QuietWaiting(ctx context.Context, batchID string) (int, error) {
	var n int64
	err := s.reader(ctx).Model(&Message{}).Where("batch_id = ? AND status = ? AND error_class = ?", batchID, StatusPending, ErrorClassQuietHours).
		Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("models: quiet-hours waits of batch %s: %w", batchID, err)
	}
	return int(n), nil
}
