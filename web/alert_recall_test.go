package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"herald/alert"
	"herald/audit"
)

// firstStepOf returns the alert's first step, not fired yet.
func (c *console) firstStepOf(alertID int64) alert.AlertStep {
	c.t.Helper()
	steps, err := alert.Of(c.store).AlertSteps(context.Background(), alertID)
	if err != nil || len(steps) == 0 {
		c.t.Fatalf("steps of alert %d: %v, %v", alertID, steps, err)
	}
	return steps[0]
}

// Recalling an alert's notice stops the alert: it is resolved via "recall", audited,
// its next step never calls anyone with the text taken back, and the recalled notice's
// link page shows none of it.
func TestRecallOfAlertNoticeStopsTheAlert(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	a, msgs := c.ackAlert("E2001", "E2002")
	recalled := msgs["E2001"]
	resp, body := c.as(operatorUser).post("/messages/"+recalled.ID+"/recall", nil)
	wantRedirect(t, "recall the notice", resp, body, "/messages/"+recalled.ID)

	got := c.alert(a.ID)
	if got.State != alert.AlertResolved || got.ResolvedVia != alert.AlertViaRecall || got.ResolvedBy != operatorUser {
		t.Fatalf("alert after its notice's recall: %s via %q by %q; want resolved via recall by %s", got.State, got.ResolvedVia, got.ResolvedBy, operatorUser)
	}
	e := c.lastAudit("alert.resolve")
	if p := e.ParamMap(); p["via"] != alert.AlertViaRecall || p["message"] != recalled.ID || e.Actor != operatorUser {
		t.Errorf("alert.resolve audit entry %+v %v", e, p)
	}
	step := c.firstStepOf(a.ID)
	if step.CancelledAt == nil {
		t.Errorf("the alert's first step is still due after the recall: %+v", step)
	}
	if fired, err := c.h.Dispatch.Alerts().FireAlertStep(ctx, step.ID, time.Now().Add(time.Hour)); err != nil || fired {
		t.Errorf("the step fired after the recall: %v, %v", fired, err)
	}
	var called int64
	if err := c.store.SQL().QueryRow("SELECT COUNT(*) FROM messages WHERE alert_id = ? AND batch_id <> ?", a.ID, a.BatchID).Scan(&called); err != nil {
		t.Fatal(err)
	}
	if called != 0 {
		t.Errorf("%d notices of the recalled alert went to the next step's people", called)
	}

	anon := c.as("")
	resp, body = anon.get(c.ackPath(recalled))
	wantStatus(t, "the recalled notice's link", resp, body, http.StatusGone)
	wantContains(t, "the recalled notice's link", body, "withdrawn")
	wantNotContains(t, "the recalled notice's link", body, "Core banking alarm", "Transfers failing")
	resp, body = anon.post(c.ackPath(recalled), map[string][]string{"action": {"resolve"}})
	wantStatus(t, "a tap on the recalled notice's page", resp, body, http.StatusGone)
	wantNotContains(t, "a tap on the recalled notice's page", body, "Transfers failing")
}

// A cancelled notice's link page shows nothing of it either.
func TestCancelledAlertNoticeLinkShowsNothing(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	_, msgs := c.ackAlert("E2001")
	m := msgs["E2001"]
	if _, err := c.h.Dispatch.Messages().CancelMessage(context.Background(), audit.System("test"), m.ID); err != nil {
		t.Fatal(err)
	}
	resp, body := c.as("").get(c.ackPath(m))
	wantStatus(t, "the cancelled notice's link", resp, body, http.StatusGone)
	wantNotContains(t, "the cancelled notice's link", body, "Core banking alarm", "Transfers failing")
}

// The key that opened an alert sees the notices its steps sent, and may recall one,
// which stops the alert; another send key still sees none of them.
func TestKeySeesAndRecallsItsAlertStepNotices(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	c.ackAlert("E2002") // links and the policy (its step calls E1001)
	keys := map[string]string{}
	for _, name := range []string{"crm", "erp"} {
		_, secret, err := c.store.Access().CreateAPIKey(ctx, name, "send,read", adminUser)
		if err != nil {
			t.Fatal(err)
		}
		keys[name] = secret
	}
	call := func(key, method, path, body string) (int, map[string]any) {
		t.Helper()
		resp, raw := c.as("").do(method, path, "application/json", strings.NewReader(body), map[string]string{"Authorization": "Bearer " + keys[key]})
		out := map[string]any{}
		_ = json.Unmarshal([]byte(raw), &out)
		return resp.StatusCode, out
	}
	status, out := call("crm", "POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2002"],"content":{"text":"核心系统告警"},"ack":{"policy":"ack-test"}}`)
	if status != http.StatusAccepted || out["alert_id"] == nil {
		t.Fatalf("send with ack: %d %v", status, out)
	}
	alertID := int64(out["alert_id"].(float64))
	a := c.alert(alertID)
	if fired, err := c.h.Dispatch.Alerts().FireAlertStep(ctx, c.firstStepOf(alertID).ID, time.Now().Add(time.Hour)); err != nil || !fired {
		t.Fatalf("fire the first step: %v, %v", fired, err)
	}
	var stepNotice string
	if err := c.store.SQL().QueryRow("SELECT id FROM messages WHERE alert_id = ? AND batch_id <> ?", alertID, a.BatchID).Scan(&stepNotice); err != nil {
		t.Fatal(err)
	}
	if status, out := call("crm", "GET", "/api/v1/messages/"+stepNotice, ""); status != http.StatusOK {
		t.Errorf("the alert's key reads its step's notice: %d %v", status, out)
	}
	status, out = call("crm", "GET", "/api/v1/messages?recipient=E1001", "")
	if list, _ := out["messages"].([]any); status != http.StatusOK || len(list) != 1 {
		t.Errorf("the alert's key lists its step's notices: %d %v", status, out)
	}
	if status, _ := call("erp", "GET", "/api/v1/messages/"+stepNotice, ""); status != http.StatusNotFound {
		t.Errorf("another key reads the step's notice: %d, want 404", status)
	}
	if status, _ := call("erp", "POST", "/api/v1/messages/"+stepNotice+"/recall", "{}"); status != http.StatusNotFound {
		t.Errorf("another key recalls the step's notice: %d, want 404", status)
	}
	if status, out := call("crm", "POST", "/api/v1/messages/"+stepNotice+"/recall", "{}"); status != http.StatusOK {
		t.Fatalf("the alert's key recalls its step's notice: %d %v", status, out)
	}
	if got := c.alert(alertID); got.State != alert.AlertResolved || got.ResolvedVia != alert.AlertViaRecall {
		t.Errorf("alert after its step notice's recall: %s via %q", got.State, got.ResolvedVia)
	}
}
