package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"herald/access"
	"herald/audit"
	"herald/dispatch"
	"herald/models"
	"herald/recall"
)

// While an operator's recall of a whole batch waits for approval, and after it was
// rejected, the same operator cannot recall its messages one at a time, in the console
// or through an API key of theirs: 409 naming the request, audited as a refused recall.
// Someone else still may.
func TestRecallOneAtATimeRefusedWhileBatchRecallWaits(t *testing.T) {
	t.Parallel()
	c := newRecallConsole(t)
	ctx := context.Background()
	op, admin := c.as(operatorUser), c.as(adminUser)
	_, secret, err := c.store.Access().CreateAPIKey(ctx, "op-key", "send,read", operatorUser)
	if err != nil {
		t.Fatal(err)
	}
	api := func(path string) (*http.Response, string) {
		t.Helper()
		return c.as("").do("POST", path, "application/json", strings.NewReader(`{}`), map[string]string{"Authorization": "Bearer " + secret})
	}
	batch, ids := c.sent("WX0", "WX1", "WX2")
	if err := c.store.Intake().SetApprovalThreshold(ctx, 1, "test"); err != nil {
		t.Fatal(err)
	}
	c.h.Dispatch.ForgetThreshold()
	resp, body := op.post("/batches/"+batch+"/recall", nil)
	wantRedirect(t, "ask for a batch recall", resp, body, "/batches/"+batch)
	r, err := recall.Of(c.store).LatestRecallRequest(ctx, batch)
	if err != nil || r == nil {
		t.Fatalf("recall request: %+v, %v", r, err)
	}
	request := strconv.FormatInt(r.ID, 10)

	resp, body = op.post("/messages/"+ids[0]+"/recall", nil)
	wantStatus(t, "console recall of one message while the batch recall waits", resp, body, http.StatusConflict)
	wantContains(t, "console refusal", body, "awaits another person", batch, "request "+request)
	// The batch's messages are not the key's own: an admin key of the operator's.
	_, adminSecret, err := c.store.Access().CreateAPIKey(ctx, "op-admin", access.ScopeAdmin, operatorUser)
	if err != nil {
		t.Fatal(err)
	}
	secret = adminSecret
	resp, body = api("/api/v1/messages/" + ids[1] + "/recall")
	wantStatus(t, "API recall of one message while the batch recall waits", resp, body, http.StatusConflict)
	wantContains(t, "API refusal", body, `"code":"recall_request_awaiting"`, "request "+request)
	if c.recalledOnPlatform(ids[0]) || c.recalledOnPlatform(ids[1]) {
		t.Error("a message was recalled one at a time while the batch recall waited")
	}
	e := c.lastAudit("message.recall_refuse")
	if p := e.ParamMap(); p["reason"] != recall.RecallRequestAwaiting || p["request"] != request || e.TargetID != ids[1] {
		t.Errorf("refusal's audit entry %+v %v", e, p)
	}

	resp, body = admin.post("/batches/"+batch+"/recall/reject", url.Values{"reason": {"right people"}})
	wantRedirect(t, "reject", resp, body, "/batches/"+batch)
	resp, body = op.post("/messages/"+ids[0]+"/recall", nil)
	wantStatus(t, "recall of one message after the rejection", resp, body, http.StatusConflict)
	wantContains(t, "refusal after the rejection", body, "was rejected by "+adminUser)
	resp, body = api("/api/v1/messages/" + ids[2] + "/recall")
	wantStatus(t, "API recall after the rejection", resp, body, http.StatusConflict)
	wantContains(t, "API refusal after the rejection", body, `"code":"recall_request_rejected"`)
	if c.recalledOnPlatform(ids[0]) || c.recalledOnPlatform(ids[2]) {
		t.Error("a message was recalled one at a time after the batch recall was rejected")
	}

	// Another person is not bound by the operator's request.
	resp, body = admin.post("/messages/"+ids[2]+"/recall", nil)
	wantRedirect(t, "another person's recall", resp, body, "/messages/"+ids[2])
	if !c.recalledOnPlatform(ids[2]) {
		t.Error("another person's recall did not reach WeCom")
	}
}

// A recall that cannot happen leaves an audit entry saying why: a platform that
// cannot recall, a message with nothing to recall.
func TestRefusedRecallsAreAudited(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	res, err := c.h.Dispatch.Submit(ctx, dispatch.Request{Source: "console", Actor: "test", Makers: []string{"test"},
		Platform: "sandbox", Recipients: []string{"E2001"}, Text: "Wrong department"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Messages[0].ID
	c.finish(id, models.Outcome{Status: models.StatusSent, ProviderMessageID: "p1", CountsAttempt: true, Called: true})
	resp, body := c.as(operatorUser).post("/messages/"+id+"/recall", nil)
	wantStatus(t, "recall on a platform that cannot", resp, body, http.StatusConflict)
	e := c.lastAudit("message.recall_refuse")
	if p := e.ParamMap(); e.TargetID != id || e.Actor != operatorUser || p["reason"] != recall.RecallUnsupported {
		t.Errorf("refusal's audit entry %+v %v", e, p)
	}
	res, err = c.h.Dispatch.Submit(ctx, dispatch.Request{Source: "console", Actor: "test", Makers: []string{"test"},
		Platform: "sandbox", Recipients: []string{"E2001"}, Text: "Another"})
	if err != nil {
		t.Fatal(err)
	}
	other := res.Messages[0].ID
	if _, err := c.h.Dispatch.Messages().CancelMessage(ctx, audit.System("test"), other); err != nil {
		t.Fatal(err)
	}
	resp, body = c.as(operatorUser).post("/messages/"+other+"/recall", nil)
	wantStatus(t, "recall of a cancelled message", resp, body, http.StatusConflict)
	if e := c.lastAudit("message.recall_refuse"); e.TargetID != other || e.ParamMap()["reason"] != "invalid_state" {
		t.Errorf("refusal's audit entry %+v %v", e, e.ParamMap())
	}
}
