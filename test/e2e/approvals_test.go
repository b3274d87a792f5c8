package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/internal/testenv"
	"herald/models"
)

// Maker-checker through the API: a batch over the threshold waits with nothing sent; its
// maker cannot decide on it; another admin key's approval delivers every message, a
// rejection delivers none, and a wait past 24 hours cancels the batch.
func TestApprovalsThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := startHerald(t, testEnv(t))
	ctx := context.Background()
	maker := newAPIKey(t, h, "admin") // a key of the person "test"
	// Another key of the same person is the same maker; the checker is someone else's.
	_, secret, err := h.App.Store.Access().CreateAPIKey(ctx, "maker-too", "admin", "test")
	if err != nil {
		t.Fatal(err)
	}
	makerToo := &apiClient{T: t, Base: h.URL, Key: secret}
	if _, secret, err = h.App.Store.Access().CreateAPIKey(ctx, "checker", "admin", "checker-person"); err != nil {
		t.Fatal(err)
	}
	checker := &apiClient{T: t, Base: h.URL, Key: secret}

	if status, body, _ := checker.Call("PUT", "/api/v1/settings", `{"approval_threshold":-1}`); status != 422 || errorField(body) != "approval_threshold" {
		t.Fatalf("threshold -1: %d %s, want 422 naming approval_threshold", status, body["_raw"])
	}
	if status, body, _ := checker.Call("PUT", "/api/v1/settings", `{"approval_threshold":2}`); status != 200 || body["approval_threshold"] != 2.0 {
		t.Fatalf("threshold 2: %d %s", status, body["_raw"])
	}
	three := `{"platform":"sandbox","recipients":["E2001","E2002","E2003"],"content":{"text":"%s"}}`
	send := func(text string) string {
		t.Helper()
		status, body, _ := maker.Call("POST", "/api/v1/messages", fmt.Sprintf(three, text))
		if status != 202 || body["status"] != models.ApprovalAwaiting || body["accepted"] != 3.0 {
			t.Fatalf("send to 3 over a threshold of 2: %d %s, want 202 awaiting_approval", status, body["_raw"])
		}
		return body["batch_id"].(string)
	}
	batchStatus := func(id string) map[string]any {
		t.Helper()
		_, b, _ := checker.Call("GET", "/api/v1/batches/"+id, "")
		return b
	}
	delivered := func(text string) int {
		n := 0
		for _, d := range h.App.Sim.Deliveries() {
			if d.Content == text {
				n++
			}
		}
		return n
	}

	approved := send("approve me")
	// Two people are not over the threshold: that batch goes at once.
	if status, body, _ := maker.Call("POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2001","E2002"],"content":{"text":"two"}}`); status != 202 || body["status"] != models.BatchOpen {
		t.Fatalf("send to 2: %d %s, want an open batch", status, body["_raw"])
	}
	testenv.WaitFor(t, 10*time.Second, "the batch of two delivered", func() bool { return delivered("two") == 2 })
	if n := delivered("approve me"); n != 0 {
		t.Fatalf("%d messages of a batch awaiting approval were delivered", n)
	}
	if status, body, _ := maker.Call("POST", "/api/v1/batches/"+approved+"/approve", ""); status != 403 {
		t.Errorf("the maker approving its own batch: %d %s, want 403", status, body["_raw"])
	}
	if status, body, _ := makerToo.Call("POST", "/api/v1/batches/"+approved+"/approve", ""); status != 403 {
		t.Errorf("another key of the maker approving: %d %s, want 403", status, body["_raw"])
	}
	if status, body, _ := checker.Call("POST", "/api/v1/batches/"+approved+"/approve", ""); status != 200 || body["status"] != models.ApprovalApproved || body["decided_by"] != "apikey:checker" {
		t.Fatalf("approve: %d %s", status, body["_raw"])
	}
	testenv.WaitFor(t, 15*time.Second, "every message of the approved batch delivered", func() bool { return delivered("approve me") == 3 })
	if status, _, _ := checker.Call("POST", "/api/v1/batches/"+approved+"/approve", ""); status != 409 {
		t.Errorf("approving twice: %d, want 409", status)
	}

	rejected := send("reject me")
	if status, body, _ := checker.Call("POST", "/api/v1/batches/"+rejected+"/reject", `{"reason":""}`); status != 422 || errorField(body) != "reason" {
		t.Errorf("reject without a reason: %d %s, want 422 naming reason", status, body["_raw"])
	}
	if status, body, _ := checker.Call("POST", "/api/v1/batches/"+rejected+"/reject", `{"reason":"wrong audience"}`); status != 200 || body["status"] != models.ApprovalRejected || body["decision_note"] != "wrong audience" {
		t.Fatalf("reject: %d %s", status, body["_raw"])
	}
	if counts, _ := batchStatus(rejected)["counts"].(map[string]any); counts["cancelled"] != 3.0 {
		t.Errorf("rejected batch counts %v, want 3 cancelled", counts)
	}

	expired := send("expire me")
	now := time.Now().UTC()
	ids, err := h.App.Store.Intake().ExpireApprovals(ctx, now.Add(time.Minute), now, alert.EndExpiredBatch)
	if err != nil || len(ids) != 1 || ids[0] != expired {
		t.Fatalf("expire: %v, %v; want the waiting batch %s", ids, err, expired)
	}
	if b := batchStatus(expired); b["status"] != models.ApprovalRejected || b["decision_note"] != models.ApprovalExpired {
		t.Errorf("expired batch: %s", b["_raw"])
	}
	entries, err := h.App.Store.AuditLog().List(ctx, audit.Filter{Target: expired}, 10)
	if err != nil || len(entries) == 0 {
		t.Errorf("no audit entry for the expired batch: %v", err)
	}

	// Nothing of the rejected or expired batches was delivered, even after a sweep.
	sweeper, err := h.App.Sweeper()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sweeper.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := delivered("reject me") + delivered("expire me"); n != 0 {
		t.Errorf("%d messages of rejected or expired batches were delivered", n)
	}
}
