package delivery

import (
	"time"

	"herald/i18n"
)

// limitWindow is one of an account's limits seen as a window length and a cap.
type limitWindow struct {
	name    string
	seconds int
	value   int
	// perRecipient windows count one person's messages; account windows count all.
	perRecipient bool
}

func (l Limits) windows() []limitWindow {
	out := make([]limitWindow, len(LimitWindows))
	for i, w := range LimitWindows {
		out[i] = limitWindow{w.Name, int(w.Len / time.Second), *w.Of(&l), w.PerRecipient}
	}
	return out
}

// LimitWarning is a limit that can never be reached because another limit is tighter.
type LimitWarning struct {
	Window  string // the unreachable limit, e.g. per_second
	Value   int
	By      string // the limit that keeps it from being reached
	ByValue int
	// Bound is what By allows over Window's length, when By's window is shorter; 0
	// when By's own value is the bound.
	Bound int
	// Seconds is Window's length.
	Seconds int
}

// In says it in lang: in English with the limits' API names ("per_second (20) can
// never be reached: per_minute is 10"), in other languages with their names there.
func (w LimitWarning) In(lang string) string {
	args := []any{"Name", w.Window, "Label", i18n.In(lang, "accounts.limit."+w.Window), "Value", w.Value,
		"Other", w.By, "OtherLabel", i18n.In(lang, "accounts.limit."+w.By), "OtherValue", w.ByValue}
	if w.Bound == 0 {
		return i18n.In(lang, "accounts.warning.limit_is", args...)
	}
	return i18n.In(lang, "accounts.warning.limit_allows_"+windowName(w.Seconds), append(args, "Bound", w.Bound)...)
}

// String says it in English.
func (w LimitWarning) String() string { return w.In(i18n.English) }

// LimitWarnings lists, in English, the limits that can never be reached (see
// UnreachableLimits); the API reports these.
func LimitWarnings(l Limits) []string {
	var out []string
	for _, w := range UnreachableLimits(l) {
		out = append(out, w.String())
	}
	return out
}

// UnreachableLimits lists the limits that can never be reached because another limit is
// tighter: a longer window capped below a shorter one (per_minute 10 makes per_second 20
// unreachable), a longer window capped above what a shorter one allows in it (per_second
// 1 allows at most 3600 an hour, so per_hour 5000 never applies), and per-recipient
// limits above the account's. Such settings are legal, so these are warnings, not
// validation errors; the console shows them beside the limits.
func UnreachableLimits(l Limits) []LimitWarning {
	var out []LimitWarning
	ws := l.windows()
	for _, w := range ws {
		if w.value <= 0 {
			continue
		}
		// The tightest bound another window puts on w, and what makes it.
		var tightest *LimitWarning
		for _, o := range ws {
			// Account windows bound everything; per-recipient windows bound only
			// per-recipient windows (another person's messages do not count).
			if o.name == w.name || o.value <= 0 || (o.perRecipient && !w.perRecipient) {
				continue
			}
			b := o.value
			why := LimitWarning{Window: w.name, Value: w.value, By: o.name, ByValue: o.value, Seconds: w.seconds}
			if o.seconds < w.seconds {
				b = o.value * (w.seconds / o.seconds)
				why.Bound = b
			}
			if b < w.value && (tightest == nil || b < tightest.bound()) {
				tightest = &why
			}
		}
		if tightest != nil {
			out = append(out, *tightest)
		}
	}
	return out
}

// bound is the most the warning's other limit lets through in its window.
func (w LimitWarning) bound() int {
	if w.Bound > 0 {
		return w.Bound
	}
	return w.ByValue
}

// windowName names a window length for the catalog keys: second, minute, hour or day.
func windowName(seconds int) string {
	switch seconds {
	case 60:
		return "minute"
	case 3600:
		return "hour"
	case 86400:
		return "day"
	}
	return "second"
}
