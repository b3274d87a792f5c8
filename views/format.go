package views

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"herald/audit"
	"herald/i18n"
	"herald/models"
	"herald/sending"
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

// fmtTime shows t to the second, with its date and weekday, in the console's time zone
// and the language of ctx.
func fmtTime(ctx context.Context, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return i18n.DateTime(ctx, t.In(location(ctx)))
}

func fmtTimePtr(ctx context.Context, t *time.Time) string {
	if t == nil {
		return "—"
	}
	return fmtTime(ctx, *t)
}

func statusTitle(ctx context.Context, status int) string {
	switch status {
	case http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
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

// fmtDate shows the calendar date of t, with its weekday, in the console's time zone and
// the language of ctx.
func fmtDate(ctx context.Context, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return i18n.Date(ctx, t.In(location(ctx)))
}

// fmtClock shows the time of day of t, to the minute, in the console's time zone.
func fmtClock(ctx context.Context, t time.Time) string {
	return t.In(location(ctx)).Format("15:04")
}

// displayStatus is how the console shows a message's state, in the language of ctx: a
// pending message due in the future is "scheduled", and one Herald's own limiter or its
// account's quiet hours hold back says until when. class is the badge's CSS class.
func displayStatus(ctx context.Context, m models.Message, now time.Time) (label, class string) {
	if m.Status == models.StatusPending {
		switch {
		case m.ErrorClass == "throttled" && m.NextAttemptAt != nil && m.NextAttemptAt.After(now):
			return i18n.T(ctx, "messages.display.throttled_until", "Time", m.NextAttemptAt.In(location(ctx)).Format(time.TimeOnly)), "failed"
		case m.ErrorClass == sending.ErrorClassQuietHours && m.NextAttemptAt != nil && m.NextAttemptAt.After(now):
			return i18n.T(ctx, "messages.display.quiet_until", "Time", fmtTime(ctx, *m.NextAttemptAt)), "scheduled"
		case m.SendAt.After(now):
			return i18n.T(ctx, "messages.display.scheduled"), "scheduled"
		case m.DigestSlot != "":
			return i18n.T(ctx, "digests.badge"), "scheduled"
		}
	}
	return i18n.Name(ctx, "status", string(m.Status)), string(m.Status)
}

// actorName is who made a batch, as people read it: a console user's name, or the API
// key it came through (stored as "apikey:<name>").
func actorName(ctx context.Context, actor string) string {
	if name, ok := strings.CutPrefix(actor, "apikey:"); ok {
		return i18n.T(ctx, "messages.actor.api_key", "Name", name)
	}
	return actor
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

// joinInts lists numbers with sep between them: "1, 3".
func joinInts(ns []int, sep string) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = itoa(n)
	}
	return strings.Join(parts, sep)
}

// yearList writes years as "2025, 2026".
func yearList(years []int) string {
	parts := make([]string, len(years))
	for i, y := range years {
		parts[i] = itoa(y)
	}
	return strings.Join(parts, ", ")
}

// AuditSentence is what an audit entry changed, in the reader's language: its action's
// catalog sentence (audit.event.<action with "_" for ".">) filled with the entry's
// named values, each in the reader's words (see auditArgs). An entry whose action has no sentence, or that was written before
// entries had values, shows its action code.
func AuditSentence(ctx context.Context, e audit.Entry, people AuditPeople) string {
	id := "audit.event." + strings.ReplaceAll(e.Action, ".", "_")
	if !i18n.Has(i18n.Lang(ctx), id) || (e.Params == nil && e.Detail != "") {
		return e.Action
	}
	return i18n.T(ctx, id, auditArgs(ctx, e, people)...)
}
