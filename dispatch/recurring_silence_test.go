package dispatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/alert"
	"herald/audit"
	"herald/delivery"
	"herald/duty"
	"herald/inbound"
	"herald/internal/testenv"
	"herald/models"
	"herald/silence"
	"herald/tasks"
)

// A recurring silence on working days 23:30–02:00 in Shanghai, with 2026's national
// calendar loaded: its windows skip 国庆 (1–7 October) and the Sunday after it, and take
// the make-up Saturday of 10 October. A worker whose silence clock is on that Saturday
// night holds the notice of an alert an integration opened; on a 国庆 night it sends
// it. What the windows held goes on once the window is over, not before.
func TestRecurringSilenceFollowsTheHolidayCalendar(t *testing.T) {
	t.Parallel()
	f := newMeetFixture(t)
	ctx := context.Background()
	admin := audit.Actor{Name: "admin1", Type: audit.ActorUser, Person: "admin1"}
	_, days, err := duty.ParseHolidayCN(testenv.HolidayCN(t, 2026))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.d.Duty().ImportHolidays(ctx, admin, duty.NationalHolidays(days, nil), duty.HolidaysFromNational); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Alerts().CreatePolicy(ctx, admin, alert.EscalationPolicy{Name: "batch-night",
		Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}}); err != nil {
		t.Fatal(err)
	}
	it, _, err := f.d.Inbound().CreateIntegration(ctx, admin, inbound.IntegrationInput{Name: "prom", Format: inbound.FormatAlertmanager,
		DefaultRoute: &inbound.Route{Policy: "batch-night", Platform: "sandbox", Recipients: []string{"E2002"}}})
	if err != nil {
		t.Fatal(err)
	}
	at := func(day, hour, minute int) time.Time { return time.Date(2026, 10, day, hour, minute, 0, 0, shanghai) }
	f.mu.Lock()
	f.now = time.Date(2026, 9, 30, 20, 0, 0, 0, shanghai).UTC()
	f.mu.Unlock()
	sil, err := f.d.Silences().CreateSilence(ctx, user("ops"), silence.SilenceInput{Matchers: []delivery.Matcher{match("policy", "batch-night")},
		Schedule: &silence.Schedule{Days: "workdays", Start: "23:30", End: "02:00", Timezone: "Asia/Shanghai"}, Comment: "end-of-day batch"})
	if err != nil {
		t.Fatal(err)
	}
	if sil.Approval != "" {
		t.Fatalf("a narrow recurring silence awaits approval: %v", sil.ApprovalReasons)
	}
	windows, err := f.d.Silences().Occurrences(ctx, user("ops"), sil.ID, at(1, 0, 0), at(12, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	var starts []string
	for _, w := range windows {
		if w.End.Sub(w.Start) != 150*time.Minute {
			t.Errorf("window %v – %v, want 2h30", w.Start, w.End)
		}
		starts = append(starts, w.Start.In(shanghai).Format("01-02 15:04"))
	}
	if diff := cmp.Diff([]string{"09-30 23:30", "10-08 23:30", "10-09 23:30", "10-10 23:30"}, starts); diff != "" {
		t.Fatalf("occurrences (-want +got):\n%s", diff)
	}

	// notice opens an alert through the integration at when and returns its notice to
	// E2002, taken by a worker whose silence clock is at when.
	notice := func(name string, when time.Time) string {
		t.Helper()
		f.mu.Lock()
		f.now = when.UTC()
		f.mu.Unlock()
		recs, err := f.d.Inbound().Receive(ctx, it, alertmanagerBody("firing", name, "sh-core", "warning"))
		if err != nil || recs[0].AlertID == nil {
			t.Fatalf("%s: %+v, %v", name, recs, err)
		}
		var id string
		if err := f.store.SQL().QueryRow(`SELECT id FROM messages WHERE alert_id = ?`, *recs[0].AlertID).Scan(&id); err != nil {
			t.Fatal(err)
		}
		f.run(t, f.sender(t, func(c *tasks.SenderConfig) { c.SilenceNow = func() time.Time { return when } }), id)
		return id
	}
	holiday := notice("BatchLate", at(5, 23, 45))
	makeup := notice("BatchSlow", at(10, 23, 45))
	got := map[string]models.Status{"国庆": f.status(t, holiday), "make-up Saturday": f.status(t, makeup)}
	if diff := cmp.Diff(map[string]models.Status{"国庆": models.StatusSent, "make-up Saturday": models.StatusHeld}, got); diff != "" {
		t.Fatalf("notices (-want +got):\n%s", diff)
	}
	if by := f.heldBy(t, makeup); len(by) != 1 || by[0] != sil.ID {
		t.Fatalf("held by %v, want silence %d", by, sil.ID)
	}

	release := func(when time.Time) int {
		t.Helper()
		f.mu.Lock()
		f.now = when.UTC()
		f.mu.Unlock()
		released, _, err := f.d.ReleaseHeld(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return released
	}
	if n := release(at(11, 1, 59)); n != 0 {
		t.Fatalf("released %d inside the window", n)
	}
	if n := release(at(11, 2, 0)); n != 1 || f.status(t, makeup) != models.StatusPending {
		t.Fatalf("released %d at the window's end, notice %s", n, f.status(t, makeup))
	}
}
