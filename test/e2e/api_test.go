package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"herald/dispatch"
	"herald/internal/testenv"
	"herald/models"
)

// apiClient calls Herald's JSON API with a bearer key.
type apiClient struct {
	t    testing.TB
	base string
	key  string
	// lang, when set, is sent as Accept-Language.
	lang string
}

func newAPIKey(t testing.TB, h *running, scopes string) *apiClient {
	t.Helper()
	_, secret, err := h.app.Store.CreateAPIKey(context.Background(), "test-"+strings.ReplaceAll(scopes, ",", "-"), scopes, "test")
	if err != nil {
		t.Fatal(err)
	}
	return &apiClient{t: t, base: h.url, key: secret}
}

// call sends a raw body and decodes the JSON answer into a generic map (or list).
func (a *apiClient) call(method, path, body string) (int, map[string]any, http.Header) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	if a.key != "" {
		req.Header.Set("Authorization", "Bearer "+a.key)
	}
	req.Header.Set("Content-Type", "application/json")
	if a.lang != "" {
		req.Header.Set("Accept-Language", a.lang)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	testenv.CheckAPIAnswer(a.t, req, resp.StatusCode, resp.Header, raw)
	out := map[string]any{}
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &out); err != nil {
			a.t.Fatalf("%s %s: answer is not JSON: %s", method, path, raw)
		}
	} else if len(raw) > 0 && raw[0] == '[' {
		var list []any
		_ = json.Unmarshal(raw, &list)
		out["list"] = list
	}
	out["_raw"] = string(raw)
	return resp.StatusCode, out, resp.Header
}

func errorField(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	f, _ := e["field"].(string)
	return f
}

func countRows(t *testing.T, h *running, table string) int {
	t.Helper()
	var n int
	if err := h.app.Store.SQL().QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSendAPIDeliversAndReportsSkippedAndRejected(t *testing.T) {
	t.Parallel()
	h := startHerald(t, testEnv(t))
	ctx := context.Background()
	api := newAPIKey(t, h, "send,read")
	today, _ := dispatch.DateOf(time.Now(), h.app.Config.Location)
	people, _ := h.app.Store.RecipientsByExternalIDs(ctx, []string{"E1001"})
	if err := h.app.Store.SetOverride(ctx, &models.DutyOverride{Date: today, RecipientID: people[0].ID, Action: models.OverrideRemove}); err != nil {
		t.Fatal(err)
	}
	status, body, _ := api.call("POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2001","E1001","E9999","E2001"],
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
		_, msg, _ = api.call("GET", "/api/v1/messages/"+msgID, "")
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
	for _, d := range h.app.Sim.Deliveries() {
		if d.RequestID == msgID {
			found = d.Content == "Overdue: Reconcile ledger 42. Please handle it today."
		}
	}
	if !found {
		t.Errorf("no delivery with the rendered template for %s", msgID)
	}
	status, batch, _ := api.call("GET", "/api/v1/batches/"+body["batch_id"].(string), "")
	if counts, _ := batch["counts"].(map[string]any); status != 200 || counts["sent"] != 1.0 {
		t.Errorf("batch: %d %s", status, batch["_raw"])
	}
	// A sent message can be neither cancelled nor retried.
	for _, op := range []string{"cancel", "retry"} {
		if status, _, _ := api.call("POST", "/api/v1/messages/"+msgID+"/"+op, ""); status != 409 {
			t.Errorf("%s a sent message: %d, want 409", op, status)
		}
	}
	if status, _, _ := api.call("GET", "/api/v1/messages/nope", ""); status != 404 {
		t.Errorf("unknown message: %d, want 404", status)
	}
}
