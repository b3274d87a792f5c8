package inbound_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"herald/channels"
	"herald/inbound"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"

	"github.com/google/go-cmp/cmp"
)

// An edit that changes a heartbeat's interval expects the next ping an interval after
// the last one (or after the edit, when none came); one that changes only its grace
// leaves the due time, and so does any edit while a missed ping's alert is open. The
// name and token stay; a new token replaces the old at once.
func TestHeartbeatEditRecomputesDue(t *testing.T) {
	testenv.OnBothDialects(t, func(t *testing.T, s *models.Store) {
		ctx := context.Background()
		integrationFixture(t, s)
		// Monday 2026-11-23, 09:00 UTC.
		now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
		svc := inbound.NewService(inbound.Config{Store: s, Platforms: channels.Platforms, Now: func() time.Time { return now }})
		route := inbound.Route{Policy: "night", Platform: "sandbox"}
		_, token, err := svc.CreateHeartbeat(ctx, admin, inbound.HeartbeatInput{Name: "eod", Interval: "1h", Route: route})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.CreateHeartbeat(ctx, admin, inbound.HeartbeatInput{Name: "quiet", Interval: "1h", Route: route}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(30 * time.Minute)
		if _, err := svc.Ping(ctx, "eod", token); err != nil {
			t.Fatal(err)
		}
		now = now.Add(15 * time.Minute) // 09:45
		wantDue := func(name string, want time.Time) {
			t.Helper()
			h, err := svc.Heartbeat(ctx, name)
			if err != nil || !h.DueAt.Equal(want) {
				t.Fatalf("%s due %v (%v), want %s", name, h.DueAt, err, want)
			}
		}
		h, err := svc.UpdateHeartbeat(ctx, admin, "eod", inbound.HeartbeatInput{Name: "renamed", Interval: "2h", Grace: "5m", Route: route})
		if err != nil || h.Name != "eod" || h.Grace() != 5*time.Minute {
			t.Fatalf("update: %+v, %v", h, err)
		}
		wantDue("eod", time.Date(2026, 11, 23, 11, 30, 0, 0, time.UTC)) // the 09:30 ping + 2h
		if _, err := svc.UpdateHeartbeat(ctx, admin, "eod", inbound.HeartbeatInput{Interval: "2h", Grace: "20m", Route: route}); err != nil {
			t.Fatal(err)
		}
		wantDue("eod", time.Date(2026, 11, 23, 11, 30, 0, 0, time.UTC)) // the grace alone moves nothing
		if _, err := svc.UpdateHeartbeat(ctx, admin, "quiet", inbound.HeartbeatInput{Interval: "30m", Route: route}); err != nil {
			t.Fatal(err)
		}
		wantDue("quiet", time.Date(2026, 11, 23, 10, 15, 0, 0, time.UTC)) // never pinged: from the edit

		// A missed ping's alert is open: the due time stays until the next ping.
		if _, err := s.SQL().Exec("UPDATE heartbeats SET missed_at = due_at WHERE name = 'quiet'"); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.UpdateHeartbeat(ctx, admin, "quiet", inbound.HeartbeatInput{Interval: "3h", Route: route}); err != nil {
			t.Fatal(err)
		}
		wantDue("quiet", time.Date(2026, 11, 23, 10, 15, 0, 0, time.UTC))

		fresh, err := svc.RotateHeartbeatToken(ctx, admin, "eod")
		if err != nil || fresh == token {
			t.Fatalf("new token %q, %v", fresh, err)
		}
		if _, err := svc.Ping(ctx, "eod", token); !errors.Is(err, inbound.ErrToken) {
			t.Errorf("the old token: %v, want ErrToken", err)
		}
		if _, err := svc.Ping(ctx, "eod", fresh); err != nil {
			t.Errorf("the new token: %v", err)
		}
		actions := testenv.QueryStrings(t, s.SQL(), "SELECT action FROM audit_log WHERE action LIKE 'heartbeat.%' ORDER BY id")
		if want := []string{"heartbeat.create", "heartbeat.create", "heartbeat.update", "heartbeat.update", "heartbeat.update",
			"heartbeat.update", "heartbeat.token"}; cmp.Diff(want, actions) != "" {
			t.Errorf("audited (-want +got):\n%s", cmp.Diff(want, actions))
		}
		if _, err := svc.UpdateHeartbeat(ctx, admin, "nosuch", inbound.HeartbeatInput{Interval: "1h", Route: route}); !errors.Is(err, kernel.ErrNotFound) {
			t.Errorf("an edit of no heartbeat: %v, want ErrNotFound", err)
		}
	})
}
