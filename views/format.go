package views

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"herald/i18n"
	"herald/models"
)

type locationKey struct{}

// WithLocation returns a context whose rendered times show in loc (HERALD_TIMEZONE).
func WithLocation(ctx context.Context, loc *time.Location) context.Context {
	return context.WithValue(ctx, locationKey{}, loc)
}

func location(ctx context.Context) *time.Location {
	if loc, ok := ctx.Value(locationKey{}).(*time.Location); ok {
		return loc
	}
	return time.UTC
}

func fmtTime(ctx context.Context, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.In(location(ctx)).Format("2006-01-02 15:04:05")
}

func fmtTimePtr(ctx context.Context, t *time.Time) string {
	if t == nil {
		return "—"
	}
	return fmtTime(ctx, *t)
}

func statusTitle(ctx context.Context, status int) string {
	switch status {
	case http.StatusForbidden, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return i18n.T(ctx, fmt.Sprintf("error.title_%d", status))
	}
	return i18n.T(ctx, "error.title_other", "Status", status)
}

func itoa(n int) string { return fmt.Sprint(n) }

func percent(part, whole int) string {
	if whole == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}

// fmtDate shows the calendar date of t in the console's time zone.
func fmtDate(ctx context.Context, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.In(location(ctx)).Format(time.DateOnly)
}

// weekdayNames are ISO weekdays: 1 = Monday … 7 = Sunday.
var weekdayNames = [...]string{"", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

// weekdayName names an ISO weekday (1 = Monday … 7 = Sunday).
func weekdayName(n int) string {
	if n < 1 || n > 7 {
		return fmt.Sprint(n)
	}
	return weekdayNames[n]
}

// displayStatus is how the console shows a message's state: a pending message due in
// the future is "scheduled", and one Herald's own limiter holds back says until when.
func displayStatus(ctx context.Context, m models.Message, now time.Time) (label, class string) {
	if m.Status == models.StatusPending {
		switch {
		case m.ErrorClass == "throttled" && m.NextAttemptAt != nil && m.NextAttemptAt.After(now):
			return "throttled until " + m.NextAttemptAt.In(location(ctx)).Format("15:04:05"), "failed"
		case m.SendAt.After(now):
			return "scheduled", "scheduled"
		}
	}
	return string(m.Status), string(m.Status)
}

func joinComma(list []string) string { return strings.Join(list, ",") }

// dateWeekday names the weekday of a YYYY-MM-DD date.
func dateWeekday(date string) string {
	t, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return ""
	}
	return t.Weekday().String()
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// unknownAttempts returns the numbers of the attempts whose outcome is unknown (their
// worker died during the call), in order.
func unknownAttempts(attempts []models.Attempt) []int {
	var out []int
	for _, a := range attempts {
		if a.Outcome == models.AttemptUnknown {
			out = append(out, a.N)
		}
	}
	return out
}

// joinInts lists numbers as "1, 3".
func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = itoa(n)
	}
	return strings.Join(parts, ", ")
}
