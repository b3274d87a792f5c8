package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"herald/delivery"
	"herald/dispatch"
	"herald/internal/testenv"
	"herald/models"
	"herald/simulator"
)

// silenceBody is a silence for the API from a minute ago for d, with matchers as JSON.
func silenceBody(matchers, onEnd string, d time.Duration) string {
	return fmt.Sprintf(`{"matchers":%s,"starts_at":%q,"ends_at":%q,"comment":"core banking upgrade","on_end":%q}`, matchers,
		time.Now().Add(-time.Minute).Format(time.RFC3339), time.Now().Add(d).Format(time.RFC3339), onEnd)
}

// The silences API: bad input is 422 naming the field with nothing written; a send key
// sees and changes only its own silences, an admin key any; DELETE expires.
func TestSilencesAPI(t *testing.T) {
	t.Parallel()
	h := startHerald(t, testEnv(t))
	own, other, admin := newAPIKey(t, h, "send"), newAPIKey(t, h, "send,read"), newAPIKey(t, h, "admin")
	now := time.Now()
	for _, bad := range []struct{ body, field string }{
		{silenceBody(`[{"name":"host","value":"db1"}]`, "release", time.Hour), "matchers[0].name"},
		{silenceBody(`[{"name":"platform","value":"wecom"},{"name":"template","value":"disk-(","regex":true}]`, "release", time.Hour), "matchers[1].value"},
		{fmt.Sprintf(`{"matchers":[],"starts_at":%q,"ends_at":%q,"comment":"x"}`, now.Add(time.Hour).Format(time.RFC3339), now.Add(time.Minute).Format(time.RFC3339)), "ends_at"},
		{silenceBody(`[{"name":"platform","value":"wecom"}]`, "drop", time.Hour), "on_end"},
	} {
		if status, body, _ := own.Call("POST", "/api/v1/silences", bad.body); status != http.StatusUnprocessableEntity || errorField(body) != bad.field {
			t.Errorf("%s: %d %s, want 422 naming %s", bad.body, status, body["_raw"], bad.field)
		}
	}
	if n := countRows(t, h, "silences"); n != 0 {
		t.Errorf("refused silences left %d rows", n)
	}
	if status, body, _ := own.Call("GET", "/api/v1/silences?state=paused", ""); status != http.StatusUnprocessableEntity || errorField(body) != "state" {
		t.Errorf("state=paused: %d %s", status, body["_raw"])
	}

	status, created, _ := own.Call("POST", "/api/v1/silences", silenceBody(`[{"name":"department","value":"Counter"}]`, "", time.Hour))
	if status != http.StatusCreated || created["state"] != "active" || created["on_end"] != "release" || created["approval"] != "none" {
		t.Fatalf("create: %d %s", status, created["_raw"])
	}
	path := "/api/v1/silences/" + strconv.FormatFloat(created["id"].(float64), 'f', 0, 64)
	if status, body, _ := other.Call("GET", path, ""); status != http.StatusNotFound {
		t.Errorf("another send key reading it: %d %s", status, body["_raw"])
	}
	if status, body, _ := other.Call("DELETE", path, ""); status != http.StatusNotFound {
		t.Errorf("another send key expiring it: %d %s", status, body["_raw"])
	}
	if _, body, _ := other.Call("GET", "/api/v1/silences", ""); len(body["silences"].([]any)) != 0 {
		t.Errorf("another send key lists %s", body["_raw"])
	}
	if status, body, _ := admin.Call("GET", path, ""); status != http.StatusOK {
		t.Errorf("an admin key reading it: %d %s", status, body["_raw"])
	}
	status, updated, _ := own.Call("PUT", path, silenceBody(`[{"name":"department","value":"Credit"}]`, "cancel", 2*time.Hour))
	if m := updated["matchers"].([]any); status != http.StatusOK || updated["on_end"] != "cancel" || m[0].(map[string]any)["value"] != "Credit" {
		t.Errorf("update: %d %s", status, updated["_raw"])
	}
	if status, body, _ := own.Call("PUT", path, silenceBody(`[]`, "cancel", 2*time.Hour)); status != http.StatusOK || body["approval"] != "awaiting_approval" || body["state"] != "pending" {
		t.Errorf("widened to everything: %d %s, want it pending approval", status, body["_raw"])
	}
	if status, body, _ := own.Call("DELETE", path, ""); status != http.StatusOK || body["state"] != "expired" {
		t.Errorf("expire: %d %s", status, body["_raw"])
	}
	if status, body, _ := own.Call("DELETE", path, ""); status != http.StatusConflict {
		t.Errorf("expire again: %d %s", status, body["_raw"])
	}
	if _, body, _ := own.Call("GET", "/api/v1/silences?state=expired", ""); len(body["silences"].([]any)) != 1 {
		t.Errorf("expired silences: %s", body["_raw"])
	}
	var audits int
	if err := h.App.Store.SQL().QueryRow("SELECT COUNT(*) FROM audit_log WHERE action IN ('silence.create', 'silence.update', 'silence.expire')").Scan(&audits); err != nil || audits != 4 {
		t.Errorf("%d audit entries of silences (%v), want 4 (create, two updates, expire)", audits, err)
	}
}

// Through a real worker: messages matching an active silence are held as they come due,
// with no attempt and nothing sent, counted in Prometheus; expired, the silence releases
// them through the normal path, within the account's per-second limit.
func TestSilenceHoldsThenReleasesWithinLimits(t *testing.T) {
	env := testEnv(t)
	rig := newFaultRig(t, env, 20, simulator.Faults{})
	ctx := context.Background()
	rig.Account.Limits = delivery.Limits{PerSecond: 10}
	if err := rig.H.App.Store.SaveAccount(ctx, rig.Account); err != nil {
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
	env := testEnv(t)
	rig := newFaultRig(t, env, 40, simulator.Faults{})
	ctx := context.Background()
	start, end := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	sil, err := rig.H.App.Dispatch.CreateSilence(ctx, dispatch.System("test"), dispatch.SilenceInput{
		Matchers: []delivery.Matcher{{Name: "recipient", Value: "F000[0-3][0-9]", Regex: true}}, StartsAt: &start, EndsAt: &end,
		Comment: "restart drill"})
	if err != nil {
		t.Fatal(err)
	}
	// A regex silence waits for a second person.
	if err := rig.H.App.Dispatch.DecideSilence(ctx, dispatch.System("approver"), sil.ID, true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	ids := rig.Submit(t)
	testenv.WaitFor(t, 20*time.Second, "every message held", func() bool { return rig.StatusCounts(t)[models.StatusHeld] == len(ids) })
	rig.H.Stop()

	rig.H = startHerald(t, env, sweepAtOnce)
	if _, err := rig.H.App.Dispatch.ExpireSilence(ctx, dispatch.System("test"), sil.ID); err != nil {
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
