package dispatch_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"herald/audit"
	"herald/dispatch"
	"herald/internal/testenv"
	"herald/models"
	"herald/reports"
)

// TestScheduledReportGoesOutAsANotice: on Monday 09:00 a weekly schedule's report goes
// through the intake as an ordinary batch of source "report", one message to each
// person named, its text the summary with the link; a second pass sends nothing.
func TestScheduledReportGoesOutAsANotice(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	ctx := context.Background()
	loc, _ := time.LoadLocation("Asia/Shanghai")
	dispatch.SetLocation(f.d, loc)
	now := time.Date(2026, 11, 25, 15, 0, 0, 0, loc) // a Wednesday
	dispatch.SetClock(f.d, func() time.Time { return now })
	svc := dispatch.Reports(f.d, "zh-CN", "https://herald.example")
	by := audit.Actor{Name: "test", Type: audit.ActorUser, Person: "test"}
	if _, err := svc.CreateSchedule(ctx, by, reports.ScheduleInput{Report: "duty", Period: "weekly",
		Send: reports.Send{Account: models.SandboxAccountName, Recipients: []string{"E1001", "E1002"}}}); err != nil {
		t.Fatal(err)
	}
	now = time.Date(2026, 11, 30, 9, 0, 0, 0, loc) // Monday 09:00
	for pass, want := range []int{1, 0} {
		n, err := svc.SendDue(ctx)
		if err != nil || n != want {
			t.Fatalf("pass %d: sent %d (want %d), %v", pass, n, want, err)
		}
	}
	rows := testenv.QueryStrings(t, f.store.SQL(), "SELECT b.source, m.content FROM messages m JOIN batches b ON b.id = m.batch_id")
	if len(rows) != 2 {
		t.Fatalf("messages: %q", rows)
	}
	for _, r := range rows {
		if !strings.HasPrefix(r, "report Herald 报表：值班负荷，2026-11-23 至 2026-11-29") || !strings.Contains(r, "https://herald.example/reports?from=2026-11-23&to=2026-11-29") {
			t.Errorf("message %q", r)
		}
	}
}
