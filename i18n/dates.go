package i18n

import (
	"context"
	"strconv"
	"time"
)

// isoWeekday numbers a weekday as ISO 8601 does: 1 = Monday … 7 = Sunday.
func isoWeekday(d time.Weekday) int {
	if d == time.Sunday {
		return 7
	}
	return int(d)
}

// Weekday names an ISO weekday (1 = Monday … 7 = Sunday) in the language of ctx.
func Weekday(ctx context.Context, iso int) string {
	if iso < 1 || iso > 7 {
		return strconv.Itoa(iso)
	}
	return T(ctx, "weekday."+strconv.Itoa(iso))
}

// Date shows the calendar date of t with its weekday, in the language of ctx:
// 2026年11月22日 星期日, or Sun 22 Nov 2026. t is shown in its own location.
func Date(ctx context.Context, t time.Time) string {
	return T(ctx, "format.date", "Y", t.Year(), "M", int(t.Month()), "D", t.Day(),
		"Mon", T(ctx, "month_short."+strconv.Itoa(int(t.Month()))),
		"Weekday", T(ctx, "weekday_short."+strconv.Itoa(isoWeekday(t.Weekday()))))
}

// DateTime shows t to the second with its date and weekday, in the language of ctx:
// 2026年11月22日 星期日 14:05:09, or Sun 22 Nov 2026 14:05:09.
func DateTime(ctx context.Context, t time.Time) string {
	return T(ctx, "format.datetime", "Date", Date(ctx, t), "Time", t.Format(time.TimeOnly))
}
