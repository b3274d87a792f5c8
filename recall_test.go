package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"herald/dispatch"
	"herald/internal/testenv"
	"herald/models"
	"herald/simulator"
)

// recallRig is Herald with a WeCom account on a simulator, people with WeCom ids, and a
// send key with a callback.
type recallRig struct {
	h    *running
	sim  *simulator.Simulator
	api  *apiClient // the key "crm", created by "test", with a callback
	recv *callbackReceiver
}

func newRecallRig(t *testing.T) *recallRig {
	t.Helper()
	h := startHerald(t, testEnv(t))
	ctx := context.Background()
	sim := simulator.NewWithOptions(simulator.Faults{}, simulator.Options{Seed: 7})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	acct := &models.Account{Name: "wecom-main", Platform: "wecom", IsDefault: true, Enabled: true, AllowPrivateNetwork: true,
		MaxAttempts: 3, Healthy: true,
		Config: map[string]string{"corp_id": "ww0123", "secret": "s3cret", "agent_id": "1000002", "base_url": srv.URL + "/wecom"}}
	if err := h.app.Store.SaveAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	var people []models.Recipient
	for i := range 4 {
		people = append(people, models.Recipient{ExternalID: fmt.Sprintf("RC%03d", i), Name: fmt.Sprintf("Recall %d", i),
			OrgType: models.Branch, WecomUserid: fmt.Sprintf("wx_%d", i), Active: true})
	}
	if _, err := h.app.Store.UpsertRecipients(ctx, people); err != nil {
		t.Fatal(err)
	}
	recv := newCallbackReceiver(t)
	cb := &models.CallbackSetting{URL: recv.url, AllowPrivate: true}
	_, secret, err := h.app.Store.CreateCallbackAPIKey(ctx, "crm", "send,read", "test", models.KeyLimits{}, cb)
	if err != nil {
		t.Fatal(err)
	}
	recv.secret.Store(cb.Secret)
	return &recallRig{h: h, sim: sim, api: &apiClient{t: t, base: h.url, key: secret}, recv: recv}
}

// send sends a text to people on a platform and returns the batch and its message ids;
// extra is more JSON members of the request.
func (r *recallRig) send(t *testing.T, platform string, people []string, extra string) (string, []string) {
	t.Helper()
	body := fmt.Sprintf(`{"platform":%q,"recipients":%s,"content":{"text":"wrong audience"}%s}`, platform, jsonList(people), extra)
	code, res, _ := r.api.call("POST", "/api/v1/messages", body)
	if code != http.StatusAccepted {
		t.Fatalf("send: %d %s", code, res["_raw"])
	}
	var ids []string
	for _, m := range res["messages"].([]any) {
		ids = append(ids, m.(map[string]any)["id"].(string))
	}
	return res["batch_id"].(string), ids
}

// waitSent waits until every message is sent.
func (r *recallRig) waitSent(t *testing.T, ids ...string) {
	t.Helper()
	testenv.WaitFor(t, 20*time.Second, "messages sent", func() bool {
		for _, id := range ids {
			if m, err := r.h.app.Store.MessageByID(context.Background(), id); err != nil || m.Status != models.StatusSent {
				return false
			}
		}
		return true
	})
}

// ageSent moves a message's sent_at back by d, as if it had been sent that long ago.
func (r *recallRig) ageSent(t *testing.T, id string, d time.Duration) {
	t.Helper()
	if _, err := r.h.app.Store.SQL().Exec("UPDATE messages SET sent_at = ? WHERE id = ?", time.Now().UTC().Add(-d), id); err != nil {
		t.Fatal(err)
	}
}

// recalledOnPlatform says whether the simulator shows the message recalled.
func (r *recallRig) recalledOnPlatform(id string) bool {
	for _, d := range r.sim.Deliveries() {
		if d.RequestID == id {
			return d.Recalled
		}
	}
	return false
}

// auditCount counts the audit entries of an action on a target.
func (r *recallRig) auditCount(t *testing.T, action, target string) int {
	t.Helper()
	var n int
	err := r.h.app.Store.SQL().QueryRow("SELECT COUNT(*) FROM audit_log WHERE action = ? AND target_id = ?", action, target).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// A sent WeCom message is recalled on the platform through the simulator: the API
// answers with the message recalled, by whom and when, the delivery shows recalled, the
// recall is audited and the key's callback hears message.recalled. A sandbox message
// cannot be recalled, nor one sent longer ago than WeCom's 24 hours; one not sent yet is
// cancelled; another send key cannot recall the key's messages, an admin key can.
func TestRecallMessage(t *testing.T) {
	r := newRecallRig(t)
	_, ids := r.send(t, "wecom", []string{"RC000", "RC001"}, "")
	r.waitSent(t, ids...)
	recalled, aged := ids[0], ids[1]

	other := newAPIKey(t, r.h, "send,read")
	if code, body, _ := other.call("POST", "/api/v1/messages/"+recalled+"/recall", ""); code != http.StatusNotFound {
		t.Errorf("another key's recall: %d %s, want 404", code, body["_raw"])
	}
	code, body, _ := r.api.call("POST", "/api/v1/messages/"+recalled+"/recall", "")
	if code != http.StatusOK || body["status"] != "recalled" || body["recalled_by"] != "apikey:crm" || body["recalled_at"] == nil {
		t.Fatalf("recall: %d %s", code, body["_raw"])
	}
	if !r.recalledOnPlatform(recalled) || r.recalledOnPlatform(aged) {
		t.Errorf("simulator deliveries %+v: want only %s recalled", r.sim.Deliveries(), recalled)
	}
	if code, body, _ := r.api.call("POST", "/api/v1/messages/"+recalled+"/recall", ""); code != http.StatusConflict || errorCode(body) != "invalid_state" {
		t.Errorf("second recall: %d %s, want 409 invalid_state", code, body["_raw"])
	}
	if n := r.auditCount(t, "message.recall", recalled); n != 1 {
		t.Errorf("message.recall audit entries = %d, want 1", n)
	}

	// Past WeCom's window, even for an admin key.
	r.ageSent(t, aged, 25*time.Hour)
	admin := newAPIKey(t, r.h, "admin")
	if code, body, _ := admin.call("POST", "/api/v1/messages/"+aged+"/recall", ""); code != http.StatusConflict || errorCode(body) != "recall_window_passed" {
		t.Errorf("recall after 25 h: %d %s, want 409 recall_window_passed", code, body["_raw"])
	}

	// A platform that cannot recall.
	_, sandbox := r.send(t, "sandbox", []string{"E2001"}, "")
	r.waitSent(t, sandbox...)
	if code, body, _ := r.api.call("POST", "/api/v1/messages/"+sandbox[0]+"/recall", ""); code != http.StatusConflict || errorCode(body) != "recall_unsupported" {
		t.Errorf("sandbox recall: %d %s, want 409 recall_unsupported", code, body["_raw"])
	}

	// Not sent yet: cancelled instead.
	_, later := r.send(t, "wecom", []string{"RC002"}, `,"send_at":"`+time.Now().Add(time.Hour).Format(time.RFC3339)+`"`)
	if code, body, _ := r.api.call("POST", "/api/v1/messages/"+later[0]+"/recall", ""); code != http.StatusOK || body["status"] != "cancelled" {
		t.Errorf("recall of a scheduled message: %d %s, want 200 cancelled", code, body["_raw"])
	}

	testenv.WaitFor(t, 15*time.Second, "the message.recalled event", func() bool {
		r.recv.mu.Lock()
		defer r.recv.mu.Unlock()
		for _, e := range r.recv.events {
			if e.Type == models.EventMessageRecalled && e.MessageID != nil && *e.MessageID == recalled && e.Status == "recalled" {
				return true
			}
		}
		return false
	})
}

// A batch recall counts each outcome; for more people than the approval threshold it
// waits for someone other than the person who asked, and then recalls.
func TestRecallBatch(t *testing.T) {
	r := newRecallRig(t)
	ctx := context.Background()
	batch, ids := r.send(t, "wecom", []string{"RC000", "RC001", "RC002"}, "")
	r.waitSent(t, ids...)
	r.ageSent(t, ids[2], 25*time.Hour)
	_, scheduled := r.send(t, "wecom", []string{"RC003"}, `,"send_at":"`+time.Now().Add(time.Hour).Format(time.RFC3339)+`"`)

	code, body, _ := r.api.call("POST", "/api/v1/batches/"+batch+"/recall", "")
	want := map[string]any{"recalled": 2.0, "cancelled": 0.0, "recall_unsupported": 0.0, "recall_window_passed": 1.0, "failed": 0.0}
	if code != http.StatusAccepted || body["status"] != "completed" || fmt.Sprint(body["counts"]) != fmt.Sprint(want) {
		t.Fatalf("batch recall: %d %s, want counts %v", code, body["_raw"], want)
	}
	if !r.recalledOnPlatform(ids[0]) || !r.recalledOnPlatform(ids[1]) || r.recalledOnPlatform(ids[2]) {
		t.Errorf("simulator deliveries %+v", r.sim.Deliveries())
	}
	if n := r.auditCount(t, "batch.recall", batch); n != 1 {
		t.Errorf("batch.recall audit entries = %d, want 1", n)
	}
	_, batchJSON, _ := r.api.call("GET", "/api/v1/batches/"+batch, "")
	if counts := batchJSON["counts"].(map[string]any); counts["recalled"] != 2.0 || counts["sent"] != 1.0 {
		t.Errorf("batch counts after the recall: %v", counts)
	}

	// Approval: two people are more than a threshold of one.
	big, bigIDs := r.send(t, "wecom", []string{"RC000", "RC001"}, "")
	r.waitSent(t, bigIDs...)
	if err := r.h.app.Store.SetApprovalThreshold(ctx, 1, "test"); err != nil {
		t.Fatal(err)
	}
	r.h.app.Dispatch.ForgetThreshold()
	code, body, _ = r.api.call("POST", "/api/v1/batches/"+big+"/recall", "")
	if code != http.StatusAccepted || body["status"] != "awaiting_approval" || body["people"] != 2.0 {
		t.Fatalf("large batch recall: %d %s, want awaiting_approval for 2 people", code, body["_raw"])
	}
	if r.recalledOnPlatform(bigIDs[0]) {
		t.Error("recalled before approval")
	}
	asker := dispatch.Actor{Name: "test", Type: dispatch.ActorUser, Person: "test"}
	if _, err := r.h.app.Dispatch.ApproveRecall(ctx, asker, big); !errors.Is(err, dispatch.ErrOwnRecall) {
		t.Errorf("the key's creator approving: %v, want ErrOwnRecall", err)
	}
	bob := dispatch.Actor{Name: "bob", Type: dispatch.ActorUser, Person: "bob"}
	counts, err := r.h.app.Dispatch.ApproveRecall(ctx, bob, big)
	if err != nil || counts.Recalled != 2 {
		t.Fatalf("approval: %+v %v, want 2 recalled", counts, err)
	}
	if !r.recalledOnPlatform(bigIDs[0]) || !r.recalledOnPlatform(bigIDs[1]) {
		t.Error("not recalled on the platform after approval")
	}
	m, _ := r.h.app.Store.MessageByID(ctx, bigIDs[0])
	if m.RecalledBy != "apikey:crm" {
		t.Errorf("recalled_by %q, want the key that asked", m.RecalledBy)
	}
	if _, err := r.h.app.Dispatch.ApproveRecall(ctx, bob, big); !errors.Is(err, models.ErrStateChanged) {
		t.Errorf("approving twice: %v, want ErrStateChanged", err)
	}
	for _, action := range []string{"batch.recall_request", "batch.recall_approve", "batch.recall"} {
		if n := r.auditCount(t, action, big); n != 1 {
			t.Errorf("%s audit entries = %d, want 1", action, n)
		}
	}

	// One message is under the threshold: the scheduled one is cancelled at once.
	code, body, _ = r.api.call("POST", "/api/v1/batches/"+scheduledBatch(t, r, scheduled[0])+"/recall", "")
	if code != http.StatusAccepted || !strings.Contains(fmt.Sprint(body["counts"]), "cancelled:1") {
		t.Errorf("recall of a scheduled batch: %d %s, want 1 cancelled", code, body["_raw"])
	}
}

// scheduledBatch is the batch of a message.
func scheduledBatch(t *testing.T, r *recallRig, id string) string {
	t.Helper()
	m, err := r.h.app.Store.MessageByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m.BatchID
}
