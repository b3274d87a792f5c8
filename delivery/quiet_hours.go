package delivery

import "time"

// ErrorClassQuietHours marks a message that waits for its account's quiet hours to end:
// pending, due at the end, with no attempt used.
const ErrorClassQuietHours = "quiet_hours"

// QuietHours is a daily window, in HERALD_TIMEZONE, in which an account sends only
// high-priority messages: normal and low ones wait until it ends. Start and End are
// HH:MM; a window whose end is earlier than its start runs over midnight (20:00–08:00).
// The zero value is no window.
type QuietHours struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// Set reports whether the account has quiet hours.
func (q QuietHours) Set() bool { return q.Start != "" || q.End != "" }

// Window returns the window's start and end as minutes of the day; false when it is not
// set or not a valid window (a time that is not HH:MM, or an end equal to the start).
func (q QuietHours) Window() (start, end int, ok bool) {
	if !q.Set() {
		return 0, 0, false
	}
	start, sok := MinuteOfDay(q.Start)
	end, eok := MinuteOfDay(q.End)
	return start, end, sok && eok && start != end
}

// MinuteOfDay reads HH:MM (00:00 to 23:59).
func MinuteOfDay(s string) (int, bool) {
	t, err := time.Parse("15:04", s)
	if err != nil || len(s) != 5 {
		return 0, false
	}
	return t.Hour()*60 + t.Minute(), true
}

// Holds reports whether a message of the priority, due at now, must wait for the
// window to end, and when it ends. High priority never waits; neither does any message
// of an account whose window is not valid.
func (q QuietHours) Holds(p Priority, now time.Time, loc *time.Location) (bool, time.Time) {
	start, end, ok := q.Window()
	if p == High || !ok {
		return false, time.Time{}
	}
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
