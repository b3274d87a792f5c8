package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"herald/audit"
	"herald/delivery"
	"herald/internal/testenv"
	"herald/models"
	"herald/silence"
	"herald/simulator"
)

// silenceBody is a silence for the API from a minute ago for d, with matchers as JSON.
func silenceBody(matchers, onEnd string, d time.Duration) string {
	return fmt.Sprintf(`{"matchers":%s,"starts_at":%q,"ends_at":%q,"comment":"core banking upgrade","on_end":%q}`, matchers,
		time.Now().Add(-time.Minute).Format(time.RFC3339), time.Now().Add(d).Format(time.RFC3339), onEnd)
}

// Through a real worker: messages matching an active silence are held as they come due,
// with no attempt and nothing sent, counted in Prometheus; expired, the silence releases
// them through the normal path, within the account's per-second limit.
func TestSilenceHoldsThenReleasesWithinLimits(t *testing.T) {
	env := testEnv(t)
	rig := newFaultRig(t, env, 20, simulator.Faults{})
	ctx := context.Background()
	rig.Account.Limits = delivery.Limits{PerSecond: 10}
	if err := rig.H.App.Store.Sending().SaveAccount(ctx, rig.Account); err != nil {
		t.Fatal(err)
	}
	rig.H.App.Accounts.Forget()
	// An admin key: a send key's silence would hold only the key's own messages.
	api := newAPIKey(t, rig.H, "send,admin")
	status, sil, _ := api.Call("POST", "/api/v1/silences", silenceBody(`[{"name":"account","value":"ty-fault"}]`, "release", time.Hour))
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, sil["_raw"])
	}
	time.Sleep(1100 * time.Millisecond) // workers read silences afresh every second
	ids := rig.Submit(t)
	testenv.WaitFor(t, 20*time.Second, "every message held", func() bool { return rig.StatusCounts(t)[models.StatusHeld] == len(ids) })
	if n := len(rig.Deliveries(t)); n != 0 {
		t.Fatalf("%d deliveries while the silence held everything", n)
	}
	if n := countRows(t, rig.H, "attempts"); n != 0 {
		t.Errorf("%d attempts while held", n)
	}
	if held := heldMetric(t, rig.H); held != len(ids) {
		t.Errorf("herald_messages_held_total %d, want %d", held, len(ids))
	}
	if status, body, _ := api.Call("DELETE", "/api/v1/silences/"+strconv.FormatFloat(sil["id"].(float64), 'f', 0, 64), ""); status != http.StatusOK {
		t.Fatalf("expire: %d %s", status, body["_raw"])
	}
	counts := rig.WaitTerminal(t, len(ids), 30*time.Second)
	if counts[models.StatusSent] != len(ids) {
		t.Errorf("after the silence: %v", counts)
	}
	if dups := rig.CheckNoLoss(t, ids); dups != 0 {
		t.Errorf("%d duplicate deliveries", dups)
	}
	var ms []int64
	for _, d := range rig.Deliveries(t) {
		ms = append(ms, d.ReceivedAtMs)
	}
	if most, _ := windowOracle(ms, 1000, 10); most > 10 {
		t.Errorf("%d deliveries in one second, limit 10", most)
	}
}

// heldMetric sums herald_messages_held_total over silences.
func heldMetric(t *testing.T, h *running) int {
	t.Helper()
	families, err := h.App.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range families {
		if f.GetName() == "herald_messages_held_total" {
			for _, m := range f.GetMetric() {
				total += int(m.GetCounter().GetValue())
			}
		}
	}
	return total
}

// Herald restarted while a silence holds messages: nothing is lost, and once it ends
// each message is sent exactly once.
func TestSilenceAcrossRestart(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	rig := newFaultRig(t, env, 40, simulator.Faults{})
	ctx := context.Background()
	start, end := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	sil, err := rig.H.App.Dispatch.Silences().CreateSilence(ctx, audit.System("test"), silence.SilenceInput{
		Matchers: []delivery.Matcher{{Name: "recipient", Value: "F000[0-3][0-9]", Regex: true}}, StartsAt: &start, EndsAt: &end,
		Comment: "restart drill"})
	if err != nil {
		t.Fatal(err)
	}
	// A regex silence waits for a second person.
	if err := rig.H.App.Dispatch.Silences().DecideSilence(ctx, audit.System("approver"), sil.ID, true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	ids := rig.Submit(t)
	testenv.WaitFor(t, 20*time.Second, "every message held", func() bool { return rig.StatusCounts(t)[models.StatusHeld] == len(ids) })
	rig.H.Stop()

	rig.H = startHerald(t, env, sweepAtOnce)
	if _, err := rig.H.App.Dispatch.Silences().ExpireSilence(ctx, audit.System("test"), sil.ID); err != nil {
		t.Fatal(err)
	}
	counts := rig.WaitTerminal(t, len(ids), 30*time.Second)
	if counts[models.StatusSent] != len(ids) {
		t.Errorf("after the restart and the silence: %v", counts)
	}
	if dups := rig.CheckNoLoss(t, ids); dups != 0 {
		t.Errorf("%d duplicate deliveries", dups)
	}
	if n := countRows(t, rig.H, "attempts"); n != len(ids) {
		t.Errorf("%d attempts for %d messages", n, len(ids))
	}
}
