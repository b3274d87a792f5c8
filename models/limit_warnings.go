package models

import "fmt"

// limitWindow is one of an account's limits seen as a window length and a cap.
type limitWindow struct {
	name    string
	seconds int
	value   int
	// perRecipient windows count one person's messages; account windows count all.
	perRecipient bool
}

func (l Limits) windows() []limitWindow {
	return []limitWindow{
		{"per_second", 1, l.PerSecond, false},
		{"per_minute", 60, l.PerMinute, false},
		{"per_hour", 3600, l.PerHour, false},
		{"per_day", 86400, l.PerDay, false},
		{"per_recipient_per_minute", 60, l.PerRecipientPerMinute, true},
		{"per_recipient_per_day", 86400, l.PerRecipientPerDay, true},
	}
}

// LimitWarnings lists the limits that can never be reached because another limit is
// tighter: a longer window capped below a shorter one (per_minute 10 makes per_second 20
// unreachable), a longer window capped above what a shorter one allows in it (per_second
// 1 allows at most 3600 an hour, so per_hour 5000 never applies), and per-recipient
// limits above the account's. Such settings are legal, so these are warnings, not
// validation errors; the console shows them beside the limits.
func LimitWarnings(l Limits) []string {
	var out []string
	ws := l.windows()
	for _, w := range ws {
		if w.value <= 0 {
			continue
		}
		// The tightest bound another window puts on w, and the sentence explaining it.
		bound, why := 0, ""
		for _, o := range ws {
			// Account windows bound everything; per-recipient windows bound only
			// per-recipient windows (another person's messages do not count).
			if o.name == w.name || o.value <= 0 || (o.perRecipient && !w.perRecipient) {
				continue
			}
			b := o.value
			reason := fmt.Sprintf("%s is %d", o.name, o.value)
			if o.seconds < w.seconds {
				b = o.value * (w.seconds / o.seconds)
				reason = fmt.Sprintf("%s (%d) allows at most %d %s", o.name, o.value, b, windowPhrase(w.seconds))
			}
			if b < w.value && (why == "" || b < bound) {
				bound, why = b, reason
			}
		}
		if why != "" {
			out = append(out, fmt.Sprintf("%s (%d) can never be reached: %s", w.name, w.value, why))
		}
	}
	return out
}

func windowPhrase(seconds int) string {
	switch seconds {
	case 60:
		return "a minute"
	case 3600:
		return "an hour"
	case 86400:
		return "a day"
	}
	return "a second"
}
