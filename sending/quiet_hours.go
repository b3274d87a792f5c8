package sending

import (
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	"herald/delivery"
	"herald/kernel"
)

// ErrorClassQuietHours marks a message that waits for its account's quiet hours to end:
// pending, due at the end, with no attempt used.
const ErrorClassQuietHours = delivery.ErrorClassQuietHours

// QuietHours is an account's daily window in which only high-priority messages go out
// (delivery.QuietHours holds the rule); it is stored as "HH:MM-HH:MM" ("" for none).
type QuietHours delivery.QuietHours

// Set reports whether the account has quiet hours.
func (q QuietHours) Set() bool { return delivery.QuietHours(q).Set() }

// Validate checks both times; an error names quiet_hours.start or quiet_hours.end.
func (q QuietHours) Validate() error {
	if !q.Set() {
		return nil
	}
	start, ok := delivery.MinuteOfDay(q.Start)
	if !ok {
		return kernel.Invalid("quiet_hours.start", "accounts.quiet.error_time")
	}
	end, ok := delivery.MinuteOfDay(q.End)
	if !ok {
		return kernel.Invalid("quiet_hours.end", "accounts.quiet.error_time")
	}
	if start == end {
		return kernel.Invalid("quiet_hours.end", "accounts.quiet.error_same")
	}
	return nil
}

// Holds reports whether a message of the priority, due at now, must wait for the
// window to end, and when it ends (delivery.QuietHours.Holds).
func (q QuietHours) Holds(p delivery.Priority, now time.Time, loc *time.Location) (bool, time.Time) {
	return delivery.QuietHours(q).Holds(p, now, loc)
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
		return fmt.Errorf("sending: quiet hours from %T", v)
	}
	*q = QuietHours{}
	if s == "" {
		return nil
	}
	start, end, ok := strings.Cut(s, "-")
	if !ok {
		return fmt.Errorf("sending: quiet hours %q", s)
	}
	q.Start, q.End = start, end
	return nil
}
