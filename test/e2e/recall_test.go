package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/access"
	"herald/audit"
	"herald/directory"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
	"herald/recall"
	"herald/sending"
	"herald/simulator"
)

// recallRig is Herald with a WeCom, a Feishu and a DingTalk account on a simulator,
// people with an id on each, and a send key with a callback.
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
	for platform, cfg := range map[string]map[string]string{
		"wecom":    {"corp_id": "ww0123", "secret": "s3cret", "agent_id": "1000002", "base_url": srv.URL + "/wecom"},
		"feishu":   {"app_id": "cli_recall", "app_secret": "s3cret", "base_url": srv.URL + "/feishu"},
		"dingtalk": {"app_key": "dingrecall", "app_secret": "s3cret", "agent_id": "1", "base_url": srv.URL + "/dingtalk"},
	} {
		acct := &sending.Account{Name: platform + "-main", Platform: platform, IsDefault: true, Enabled: true, AllowPrivateNetwork: true,
			MaxAttempts: 3, Healthy: true, Config: cfg}
		if err := h.App.Store.Sending().SaveAccount(ctx, acct); err != nil {
			t.Fatal(err)
		}
	}
	var people []directory.Recipient
	for i := range 4 {
		people = append(people, directory.Recipient{ExternalID: fmt.Sprintf("RC%03d", i), Name: fmt.Sprintf("Recall %d", i),
			OrgType: directory.Branch, WecomUserid: fmt.Sprintf("wx_%d", i), FeishuUserID: fmt.Sprintf("fs_%d", i),
			DingtalkUserid: fmt.Sprintf("dt_%d", i), Active: true})
	}
	if _, err := h.App.Store.Directory().UpsertRecipients(ctx, people); err != nil {
		t.Fatal(err)
	}
	recv := newCallbackReceiver(t)
	cb := &access.CallbackSetting{URL: recv.url, AllowPrivate: true}
	_, secret, err := h.App.Store.Access().CreateCallbackAPIKey(ctx, "crm", "send,read", "test", access.KeyLimits{}, cb)
	if err != nil {
		t.Fatal(err)
	}
	recv.secret.Store(cb.Secret)
	return &recallRig{h: h, sim: sim, api: &apiClient{T: t, Base: h.URL, Key: secret}, recv: recv}
}

// send sends a text to people on a platform and returns the batch and its message ids;
// extra is more JSON members of the request.
func (r *recallRig) send(t *testing.T, platform string, people []string, extra string) (string, []string) {
	t.Helper()
	body := fmt.Sprintf(`{"platform":%q,"recipients":%s,"content":{"text":"wrong audience"}%s}`, platform, jsonList(people), extra)
	code, res, _ := r.api.Call("POST", "/api/v1/messages", body)
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
			if m, err := r.h.App.Store.MessageByID(context.Background(), id); err != nil || m.Status != models.StatusSent {
				return false
			}
		}
		return true
	})
}

// ageSent moves a message's sent_at back by d, as if it had been sent that long ago.
func (r *recallRig) ageSent(t *testing.T, id string, d time.Duration) {
	t.Helper()
	if _, err := r.h.App.Store.SQL().Exec("UPDATE messages SET sent_at = ? WHERE id = ?", time.Now().UTC().Add(-d), id); err != nil {
		t.Fatal(err)
	}
}

// recalledTo says whether the simulator shows the delivery of a message recalled, found
// by its address and its call's id: one DingTalk or WeCom call's deliveries all carry
// the request id of its first message.
func (r *recallRig) recalledTo(t *testing.T, id string) bool {
	t.Helper()
	m, err := r.h.App.Store.MessageByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range r.sim.Deliveries() {
		if d.Platform == m.Platform && d.To == m.Address && d.ProviderMsgID == m.ProviderMessageID {
			return d.Recalled
		}
	}
	t.Fatalf("no delivery of message %s to %s on %s", id, m.Address, m.Platform)
	return false
}

// statuses reads the messages' statuses, by id.
func (r *recallRig) statuses(t *testing.T, ids ...string) map[string]models.Status {
	t.Helper()
	out := map[string]models.Status{}
	for _, id := range ids {
		m, err := r.h.App.Store.MessageByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = m.Status
	}
	return out
}

// auditCount counts the audit entries of an action on a target.
func (r *recallRig) auditCount(t *testing.T, action, target string) int {
	t.Helper()
	var n int
	err := r.h.App.Store.SQL().QueryRow("SELECT COUNT(*) FROM audit_log WHERE action = ? AND target_id = ?", action, target).Scan(&n)
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
// recall is audited and the key's callback hears message.recalled. WeCom recalls the
// whole call: the other person it carried (the same content) is recalled with it, and a
// message of another call is not. A sandbox message
// cannot be recalled, nor one sent longer ago than WeCom's 24 hours; one not sent yet is
// cancelled; another send key cannot recall the key's messages, an admin key can.
func TestRecallMessage(t *testing.T) {
	t.Parallel()
	r := newRecallRig(t)
	_, ids := r.send(t, "wecom", []string{"RC000", "RC001"}, "")
	_, agedIDs := r.send(t, "wecom", []string{"RC002"}, "")
	r.waitSent(t, append(ids, agedIDs...)...)
	recalled, callMate, aged := ids[0], ids[1], agedIDs[0]

	other := newAPIKey(t, r.h, "send,read")
	if code, body, _ := other.Call("POST", "/api/v1/messages/"+recalled+"/recall", ""); code != http.StatusNotFound {
		t.Errorf("another key's recall: %d %s, want 404", code, body["_raw"])
	}
	code, body, _ := r.api.Call("POST", "/api/v1/messages/"+recalled+"/recall", "")
	if code != http.StatusOK || body["status"] != "recalled" || body["recalled_by"] != "apikey:crm" || body["recalled_at"] == nil {
		t.Fatalf("recall: %d %s", code, body["_raw"])
	}
	if !r.recalledTo(t, recalled) || !r.recalledTo(t, callMate) || r.recalledTo(t, aged) {
		t.Errorf("simulator deliveries %+v: want %s and %s (one call) recalled, %s not", r.sim.Deliveries(), recalled, callMate, aged)
	}
	if st := r.statuses(t, callMate, aged); st[callMate] != models.StatusRecalled || st[aged] != models.StatusSent {
		t.Errorf("statuses %v: want the call's other message recalled, the other call's sent", st)
	}
	if code, body, _ := r.api.Call("POST", "/api/v1/messages/"+recalled+"/recall", ""); code != http.StatusConflict || errorCode(body) != "invalid_state" {
		t.Errorf("second recall: %d %s, want 409 invalid_state", code, body["_raw"])
	}
	for _, id := range []string{recalled, callMate} {
		if n := r.auditCount(t, "message.recall", id); n != 1 {
			t.Errorf("message %s: message.recall audit entries = %d, want 1", id, n)
		}
	}

	// Past WeCom's window, even for an admin key.
	r.ageSent(t, aged, 25*time.Hour)
	admin := newAPIKey(t, r.h, "admin")
	if code, body, _ := admin.Call("POST", "/api/v1/messages/"+aged+"/recall", ""); code != http.StatusConflict || errorCode(body) != "recall_window_passed" {
		t.Errorf("recall after 25 h: %d %s, want 409 recall_window_passed", code, body["_raw"])
	}

	// A platform that cannot recall.
	_, sandbox := r.send(t, "sandbox", []string{"E2001"}, "")
	r.waitSent(t, sandbox...)
	if code, body, _ := r.api.Call("POST", "/api/v1/messages/"+sandbox[0]+"/recall", ""); code != http.StatusConflict || errorCode(body) != "recall_unsupported" {
		t.Errorf("sandbox recall: %d %s, want 409 recall_unsupported", code, body["_raw"])
	}

	// Not sent yet: cancelled instead.
	_, later := r.send(t, "wecom", []string{"RC002"}, `,"send_at":"`+time.Now().Add(time.Hour).Format(time.RFC3339)+`"`)
	if code, body, _ := r.api.Call("POST", "/api/v1/messages/"+later[0]+"/recall", ""); code != http.StatusOK || body["status"] != "cancelled" {
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

// A batch recall counts each outcome (on Feishu, which recalls one person's message at
// a time, so one of a batch can be past the window); for more people than the approval
// threshold it waits for someone other than the person who asked, and then recalls.
func TestRecallBatch(t *testing.T) {
	t.Parallel()
	r := newRecallRig(t)
	ctx := context.Background()
	batch, ids := r.send(t, "feishu", []string{"RC000", "RC001", "RC002"}, "")
	r.waitSent(t, ids...)
	r.ageSent(t, ids[2], 25*time.Hour)
	_, scheduled := r.send(t, "wecom", []string{"RC003"}, `,"send_at":"`+time.Now().Add(time.Hour).Format(time.RFC3339)+`"`)

	code, body, _ := r.api.Call("POST", "/api/v1/batches/"+batch+"/recall", "")
	want := map[string]any{"recalled": 2.0, "cancelled": 0.0, "recall_unsupported": 0.0, "recall_window_passed": 1.0, "failed": 0.0}
	if code != http.StatusAccepted || body["status"] != "completed" || fmt.Sprint(body["counts"]) != fmt.Sprint(want) {
		t.Fatalf("batch recall: %d %s, want counts %v", code, body["_raw"], want)
	}
	if !r.recalledTo(t, ids[0]) || !r.recalledTo(t, ids[1]) || r.recalledTo(t, ids[2]) {
		t.Errorf("simulator deliveries %+v", r.sim.Deliveries())
	}
	if n := r.auditCount(t, "batch.recall", batch); n != 1 {
		t.Errorf("batch.recall audit entries = %d, want 1", n)
	}
	_, batchJSON, _ := r.api.Call("GET", "/api/v1/batches/"+batch, "")
	if counts := batchJSON["counts"].(map[string]any); counts["recalled"] != 2.0 || counts["sent"] != 1.0 {
		t.Errorf("batch counts after the recall: %v", counts)
	}

	// Approval: two people are more than a threshold of one.
	big, bigIDs := r.send(t, "wecom", []string{"RC000", "RC001"}, "")
	r.waitSent(t, bigIDs...)
	if err := r.h.App.Store.Intake().SetApprovalThreshold(ctx, 1, "test"); err != nil {
		t.Fatal(err)
	}
	r.h.App.Dispatch.ForgetThreshold()
	code, body, _ = r.api.Call("POST", "/api/v1/batches/"+big+"/recall", "")
	if code != http.StatusAccepted || body["status"] != "awaiting_approval" || body["people"] != 2.0 {
		t.Fatalf("large batch recall: %d %s, want awaiting_approval for 2 people", code, body["_raw"])
	}
	if r.recalledTo(t, bigIDs[0]) {
		t.Error("recalled before approval")
	}
	asker := audit.Actor{Name: "test", Type: audit.ActorUser, Person: "test"}
	if _, err := r.h.App.Dispatch.Recalls().ApproveRecall(ctx, asker, big); !errors.Is(err, recall.ErrOwnRecall) {
		t.Errorf("the key's creator approving: %v, want ErrOwnRecall", err)
	}
	bob := audit.Actor{Name: "bob", Type: audit.ActorUser, Person: "bob"}
	counts, err := r.h.App.Dispatch.Recalls().ApproveRecall(ctx, bob, big)
	if err != nil || counts.Recalled != 2 {
		t.Fatalf("approval: %+v %v, want 2 recalled", counts, err)
	}
	if !r.recalledTo(t, bigIDs[0]) || !r.recalledTo(t, bigIDs[1]) {
		t.Error("not recalled on the platform after approval")
	}
	m, _ := r.h.App.Store.MessageByID(ctx, bigIDs[0])
	if m.RecalledBy != "apikey:crm" {
		t.Errorf("recalled_by %q, want the key that asked", m.RecalledBy)
	}
	if _, err := r.h.App.Dispatch.Recalls().ApproveRecall(ctx, bob, big); !errors.Is(err, kernel.ErrStateChanged) {
		t.Errorf("approving twice: %v, want ErrStateChanged", err)
	}
	for _, action := range []string{"batch.recall_request", "batch.recall_approve", "batch.recall"} {
		if n := r.auditCount(t, action, big); n != 1 {
			t.Errorf("%s audit entries = %d, want 1", action, n)
		}
	}

	// One message is under the threshold: the scheduled one is cancelled at once.
	code, body, _ = r.api.Call("POST", "/api/v1/batches/"+scheduledBatch(t, r, scheduled[0])+"/recall", "")
	if code != http.StatusAccepted || !strings.Contains(fmt.Sprint(body["counts"]), "cancelled:1") {
		t.Errorf("recall of a scheduled batch: %d %s, want 1 cancelled", code, body["_raw"])
	}
}

// scheduledBatch is the batch of a message.
func scheduledBatch(t *testing.T, r *recallRig, id string) string {
	t.Helper()
	m, err := r.h.App.Store.MessageByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m.BatchID
}

// A single message is recalled on each platform that can recall, through the
// simulator; past the platform's 24 hours it is 409 recall_window_passed. DingTalk and
// WeCom recall the whole call: the other person its call reached is recorded recalled
// too.
func TestRecallPerPlatform(t *testing.T) {
	t.Parallel()
	r := newRecallRig(t)
	for _, tc := range []struct {
		platform  string
		wholeCall bool
	}{{"wecom", true}, {"feishu", false}, {"dingtalk", true}} {
		t.Run(tc.platform, func(t *testing.T) {
			_, ids := r.send(t, tc.platform, []string{"RC000", "RC001"}, "")
			r.waitSent(t, ids...)
			code, body, _ := r.api.Call("POST", "/api/v1/messages/"+ids[0]+"/recall", "")
			if code != http.StatusOK || body["status"] != "recalled" {
				t.Fatalf("recall: %d %s", code, body["_raw"])
			}
			other := models.StatusSent
			if tc.wholeCall {
				other = models.StatusRecalled
			}
			want := map[string]models.Status{ids[0]: models.StatusRecalled, ids[1]: other}
			if diff := cmp.Diff(want, r.statuses(t, ids...)); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			for id, status := range want {
				recalled := status == models.StatusRecalled
				if got := r.recalledTo(t, id); got != recalled {
					t.Errorf("message %s: recalled on the platform %v, want %v", id, got, recalled)
				}
				wantAudit := 0
				if recalled {
					wantAudit = 1
				}
				if n := r.auditCount(t, "message.recall", id); n != wantAudit {
					t.Errorf("message %s: %d message.recall entries, want %d", id, n, wantAudit)
				}
			}

			_, late := r.send(t, tc.platform, []string{"RC002"}, "")
			r.waitSent(t, late...)
			r.ageSent(t, late[0], 25*time.Hour)
			if code, body, _ := r.api.Call("POST", "/api/v1/messages/"+late[0]+"/recall", ""); code != http.StatusConflict || errorCode(body) != "recall_window_passed" {
				t.Errorf("recall after 25 h: %d %s, want 409 recall_window_passed", code, body["_raw"])
			}
			if r.recalledTo(t, late[0]) {
				t.Error("a message past the window was recalled on the platform")
			}
		})
	}
}

// A batch recall on each platform counts each outcome: recalled within the window,
// recall_window_passed past it, recall_unsupported where the platform cannot recall.
// DingTalk's and WeCom's three people share one call, which one recall takes back, or
// which is past the window for all three at once.
func TestRecallBatchPerPlatform(t *testing.T) {
	t.Parallel()
	r := newRecallRig(t)
	for _, tc := range []struct {
		platform string
		aged     int // how many of the three are sent longer ago than the window
		want     recall.RecallCounts
	}{
		{"wecom", 0, recall.RecallCounts{Recalled: 3}},
		{"wecom", 3, recall.RecallCounts{RecallWindowPassed: 3}},
		{"feishu", 1, recall.RecallCounts{Recalled: 2, RecallWindowPassed: 1}},
		{"dingtalk", 0, recall.RecallCounts{Recalled: 3}},
		{"sandbox", 0, recall.RecallCounts{RecallUnsupported: 3}},
	} {
		t.Run(tc.platform, func(t *testing.T) {
			people := []string{"RC000", "RC001", "RC002"}
			if tc.platform == "sandbox" {
				people = []string{"E2001", "E2002", "E2003"}
			}
			batch, ids := r.send(t, tc.platform, people, "")
			r.waitSent(t, ids...)
			for _, id := range ids[:tc.aged] {
				r.ageSent(t, id, 25*time.Hour)
			}
			code, body, _ := r.api.Call("POST", "/api/v1/batches/"+batch+"/recall", "")
			if code != http.StatusAccepted || body["status"] != "completed" {
				t.Fatalf("batch recall: %d %s", code, body["_raw"])
			}
			var got recall.RecallCounts
			if err := json.Unmarshal([]byte(mustJSON(t, body["counts"])), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			for i, id := range ids {
				if want := i >= tc.aged; tc.platform != "sandbox" && r.recalledTo(t, id) != want {
					t.Errorf("message %d: recalled on the platform %v, want %v", i, !want, want)
				}
			}
		})
	}
}

// mustJSON encodes v.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A batch recall for more people than the threshold waits for another person, who
// approves or rejects it through the API as a large send's approval is decided; the
// request expires when the earliest sent message passes its recall window, after
// which nobody can decide on it.
func TestRecallApprovalAPI(t *testing.T) {
	t.Parallel()
	r := newRecallRig(t)
	ctx := context.Background()
	threshold := func(t *testing.T, n int) {
		t.Helper()
		if err := r.h.App.Store.Intake().SetApprovalThreshold(ctx, n, "test"); err != nil {
			t.Fatal(err)
		}
		r.h.App.Dispatch.ForgetThreshold()
	}
	own := newAPIKey(t, r.h, "admin") // made by "test", who made the key asking
	_, bobSecret, err := r.h.App.Store.Access().CreateAPIKey(ctx, "bob-admin", "admin", "bob")
	if err != nil {
		t.Fatal(err)
	}
	bob := &apiClient{T: t, Base: r.h.URL, Key: bobSecret}
	ask := func(t *testing.T, people ...string) (string, []string, map[string]any) {
		t.Helper()
		threshold(t, 0) // the send itself goes out at once
		batch, ids := r.send(t, "wecom", people, "")
		r.waitSent(t, ids...)
		threshold(t, 1) // two people are more than one
		code, body, _ := r.api.Call("POST", "/api/v1/batches/"+batch+"/recall", "")
		if code != http.StatusAccepted || body["status"] != recall.RecallAwaiting {
			t.Fatalf("recall request: %d %s", code, body["_raw"])
		}
		return batch, ids, body
	}
	recallRequest := func(t *testing.T, batch string) map[string]any {
		t.Helper()
		code, body, _ := own.Call("GET", "/api/v1/batches/"+batch, "")
		if code != http.StatusOK {
			t.Fatalf("batch: %d %s", code, body["_raw"])
		}
		rr, _ := body["recall_request"].(map[string]any)
		return rr
	}

	t.Run("approve", func(t *testing.T) {
		batch, ids, _ := ask(t, "RC000", "RC001")
		if rr := recallRequest(t, batch); rr["status"] != recall.RecallAwaiting || rr["people"] != 2.0 || rr["requested_by"] != "apikey:crm" {
			t.Errorf("recall_request %v", rr)
		}
		if code, body, _ := own.Call("POST", "/api/v1/batches/"+batch+"/recall/approve", ""); code != http.StatusForbidden {
			t.Errorf("approval by the asker's own admin key: %d %s, want 403", code, body["_raw"])
		}
		code, body, _ := bob.Call("POST", "/api/v1/batches/"+batch+"/recall/approve", "")
		result, _ := body["result"].(map[string]any)
		if code != http.StatusAccepted || body["status"] != recall.RecallApproved || body["decided_by"] != "apikey:bob-admin" || result["recalled"] != 2.0 {
			t.Fatalf("approval: %d %s", code, body["_raw"])
		}
		if !r.recalledTo(t, ids[0]) || !r.recalledTo(t, ids[1]) {
			t.Error("not recalled on the platform after approval")
		}
		if code, body, _ := bob.Call("POST", "/api/v1/batches/"+batch+"/recall/approve", ""); code != http.StatusConflict || errorCode(body) != "invalid_state" {
			t.Errorf("second approval: %d %s, want 409 invalid_state", code, body["_raw"])
		}
	})

	t.Run("reject", func(t *testing.T) {
		batch, ids, _ := ask(t, "RC002", "RC003")
		if code, body, _ := bob.Call("POST", "/api/v1/batches/"+batch+"/recall/reject", `{"reason":" "}`); code != http.StatusUnprocessableEntity || body["error"].(map[string]any)["field"] != "reason" {
			t.Errorf("rejection without a reason: %d %s, want 422 naming reason", code, body["_raw"])
		}
		code, body, _ := bob.Call("POST", "/api/v1/batches/"+batch+"/recall/reject", `{"reason":"the right audience after all"}`)
		if code != http.StatusOK || body["status"] != recall.RecallRejected || body["decision_note"] != "the right audience after all" {
			t.Fatalf("rejection: %d %s", code, body["_raw"])
		}
		want := map[string]models.Status{ids[0]: models.StatusSent, ids[1]: models.StatusSent}
		if diff := cmp.Diff(want, r.statuses(t, ids...)); diff != "" {
			t.Errorf("statuses after the rejection (-want +got):\n%s", diff)
		}
		if r.recalledTo(t, ids[0]) || r.recalledTo(t, ids[1]) {
			t.Error("recalled on the platform although rejected")
		}
		if n := r.auditCount(t, "batch.recall_reject", batch); n != 1 {
			t.Errorf("batch.recall_reject entries = %d, want 1", n)
		}
	})

	t.Run("expiry", func(t *testing.T) {
		batch, ids, body := ask(t, "RC000", "RC003")
		// The request lapses when the earlier message passes WeCom's 24 hours.
		first, _ := r.h.App.Store.MessageByID(ctx, ids[0])
		expires, err := time.Parse(time.RFC3339Nano, body["expires_at"].(string))
		if err != nil || expires.Sub(first.SentAt.Add(24*time.Hour)).Abs() > 5*time.Second {
			t.Errorf("expires_at %v (%v), want the first message's sent_at %v plus 24 h", body["expires_at"], err, first.SentAt)
		}

		// Its time runs out: the batch reads expired at once, a decision is refused, and
		// the request is recorded expired, with nothing recalled.
		if _, err := r.h.App.Store.SQL().Exec("UPDATE recall_requests SET expires_at = ? WHERE batch_id = ?", time.Now().UTC().Add(-time.Minute), batch); err != nil {
			t.Fatal(err)
		}
		if rr := recallRequest(t, batch); rr["status"] != models.RecallExpired {
			t.Errorf("recall_request %v, want expired", rr)
		}
		for _, path := range []string{"/recall/approve", "/recall/reject"} {
			if code, body, _ := bob.Call("POST", "/api/v1/batches/"+batch+path, `{"reason":"too late"}`); code != http.StatusConflict || errorCode(body) != "recall_request_expired" {
				t.Errorf("%s after the expiry: %d %s, want 409 recall_request_expired", path, code, body["_raw"])
			}
		}
		if r.recalledTo(t, ids[0]) || r.recalledTo(t, ids[1]) {
			t.Error("recalled on the platform although expired")
		}
		var status string
		if err := r.h.App.Store.SQL().QueryRow("SELECT status FROM recall_requests WHERE batch_id = ?", batch).Scan(&status); err != nil || status != models.RecallExpired {
			t.Errorf("stored status %q (%v), want expired", status, err)
		}
		if n := r.auditCount(t, "batch.recall_expire", batch); n != 1 {
			t.Errorf("batch.recall_expire entries = %d, want 1", n)
		}

		// Asking again makes a new request, which can be approved.
		_, body2, _ := r.api.Call("POST", "/api/v1/batches/"+batch+"/recall", "")
		if body2["status"] != recall.RecallAwaiting {
			t.Fatalf("asking again: %s", body2["_raw"])
		}
		if code, body, _ := bob.Call("POST", "/api/v1/batches/"+batch+"/recall/approve", ""); code != http.StatusAccepted {
			t.Errorf("approving the new request: %d %s", code, body["_raw"])
		}
	})
}
