package views

import (
	"context"
	"testing"
	"time"

	"herald/alert"
	"herald/i18n"
)

// Durations read as people say them: whole seconds past the first few, minutes and
// seconds, hours and minutes; never "50.0 秒".
func TestHumanDuration(t *testing.T) {
	t.Parallel()
	zh := i18n.WithLang(context.Background(), i18n.Chinese)
	for d, want := range map[time.Duration]string{
		300 * time.Millisecond:                    "300 毫秒",
		1500 * time.Millisecond:                   "1.5 秒",
		5 * time.Second:                           "5 秒",
		50 * time.Second:                          "50 秒",
		50*time.Second + 400*time.Millisecond:     "50 秒",
		7*time.Minute + 39*time.Second:            "7 分 39 秒",
		2*time.Hour + 5*time.Minute + time.Second: "2 小时 5 分",
	} {
		if got := humanDuration(zh, d); got != want {
			t.Errorf("%s: %q, want %q", d, got, want)
		}
	}
}

// How long an alert has waited stops when someone takes it, not only when it ends.
func TestOpenForStopsAtTheAcknowledgment(t *testing.T) {
	t.Parallel()
	zh := i18n.WithLang(context.Background(), i18n.Chinese)
	opened := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	acked := opened.Add(7*time.Minute + 39*time.Second)
	ended := opened.Add(time.Hour)
	now := opened.Add(3 * time.Hour)
	for _, tc := range []struct {
		a    alert.Alert
		want string
	}{
		{alert.Alert{OpenedAt: opened}, "3 小时 0 分"},
		{alert.Alert{OpenedAt: opened, AcknowledgedAt: &acked}, "7 分 39 秒"},
		{alert.Alert{OpenedAt: opened, AcknowledgedAt: &acked, EndedAt: &ended}, "7 分 39 秒"},
		{alert.Alert{OpenedAt: opened, EndedAt: &ended}, "1 小时 0 分"},
	} {
		if got := openFor(zh, tc.a, now); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.a, got, tc.want)
		}
	}
}
