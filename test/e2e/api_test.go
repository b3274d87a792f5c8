package main

import (
	"context"
	"encoding/json"
	"herald/duty"
	"testing"
	"time"
)

func errorField(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	f, _ := e["field"].(string)
	return f
}

func countRows(t *testing.T, h *running, table string) int {
	t.Helper()
	var n int
	if err := h.App.Store.SQL().QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSendAPIDeliversAndReportsSkippedAndRejected(t *testing.T) {
	t.Parallel()
	h := startHerald(t, testEnv(t))
	ctx := context.Background()
	api := newAPIKey(t, h, "send,read")
	today, _ := duty.DateOf(time.Now(), h.App.Config.Location)
	people, _ := h.App.Store.Directory().RecipientsByExternalIDs(ctx, []string{"E1001"})
	if err := h.App.Store.Duty().SetOverride(ctx, &duty.DutyOverride{Date: today, RecipientID: people[0].ID, Action: duty.OverrideRemove}); err != nil {
		t.Fatal(err)
	}
	status, body, _ := api.Call("POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2001","E1001","E9999","E2001"],
		"template":"task-overdue","variables":{"task":"Reconcile ledger 42"},"priority":"high"}`)
	if status != 202 {
		t.Fatalf("send: %d %s", status, body["_raw"])
	}
	if body["accepted"] != 1.0 {
		t.Errorf("accepted %v, want 1 (E2001 once)", body["accepted"])
	}
	wantSkipped := `[{"reason":"off_duty","recipient":"E1001"}]`
	wantRejected := `[{"reason":"unknown_recipient","recipient":"E9999"}]`
	if got, _ := json.Marshal(body["skipped"]); string(got) != wantSkipped {
		t.Errorf("skipped %s, want %s", got, wantSkipped)
	}
	if got, _ := json.Marshal(body["rejected"]); string(got) != wantRejected {
		t.Errorf("rejected %s, want %s", got, wantRejected)
	}
	msgID := body["messages"].([]any)[0].(map[string]any)["id"].(string)
	deadline := time.Now().Add(15 * time.Second)
	var msg map[string]any
	for {
		_, msg, _ = api.Call("GET", "/api/v1/messages/"+msgID, "")
		if msg["status"] == "sent" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if msg["status"] != "sent" || msg["recipient"] != "E2001" || msg["sent_at"] == nil {
		t.Fatalf("message after delivery: %s", msg["_raw"])
	}
	history, _ := msg["history"].([]any)
	if len(history) != 1 || history[0].(map[string]any)["outcome"] != "sent" {
		t.Errorf("history %v, want one sent attempt", history)
	}
	found := false
	for _, d := range h.App.Sim.Deliveries() {
		if d.RequestID == msgID {
			found = d.Content == "Overdue: Reconcile ledger 42. Please handle it today."
		}
	}
	if !found {
		t.Errorf("no delivery with the rendered template for %s", msgID)
	}
	status, batch, _ := api.Call("GET", "/api/v1/batches/"+body["batch_id"].(string), "")
	if counts, _ := batch["counts"].(map[string]any); status != 200 || counts["sent"] != 1.0 {
		t.Errorf("batch: %d %s", status, batch["_raw"])
	}
	// A sent message can be neither cancelled nor retried.
	for _, op := range []string{"cancel", "retry"} {
		if status, _, _ := api.Call("POST", "/api/v1/messages/"+msgID+"/"+op, ""); status != 409 {
			t.Errorf("%s a sent message: %d, want 409", op, status)
		}
	}
	if status, _, _ := api.Call("GET", "/api/v1/messages/nope", ""); status != 404 {
		t.Errorf("unknown message: %d, want 404", status)
	}
}
