package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"herald/models"
)

// The console's maker-checker: an admin sets the threshold; an operator's batch over it
// waits, shown on the dashboard; its maker cannot decide on it; another operator or
// admin approves (the messages become due) or rejects with a reason (they are cancelled).
func TestConsoleApprovals(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	admin, op, viewer := c.as(adminUser), c.as(operatorUser), c.as(viewerUser)

	t.Run("settings", func(t *testing.T) {
		resp, body := admin.get("/settings")
		wantStatus(t, "settings", resp, body, http.StatusOK)
		wantContains(t, "settings", body, `name="approval_threshold"`, `value="0"`)
		for _, bad := range []string{"-1", "many", "1000001"} {
			resp, body = admin.post("/settings", url.Values{"approval_threshold": {bad}})
			wantStatus(t, "threshold "+bad, resp, body, http.StatusUnprocessableEntity)
			wantContains(t, "threshold "+bad, body, "must be a whole number from 0 (no approval) to 1000000")
		}
		resp, body = admin.post("/settings", url.Values{"approval_threshold": {"2"}})
		wantRedirect(t, "save threshold", resp, body, "/settings")
		if a := c.lastAudit("settings.update"); a.Actor != adminUser || a.Detail != "2" {
			t.Errorf("audit %+v", a)
		}
		if n, err := c.store.Intake().ApprovalThreshold(ctx); err != nil || n != 2 {
			t.Fatalf("threshold %d, %v; want 2", n, err)
		}
	})

	sandbox, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	compose := func(text string) string {
		t.Helper()
		form := url.Values{"account": {fmt.Sprint(sandbox.ID)}, "content.text": {text}, "priority": {"normal"}, "branch": {"Pudong Branch", "Xuhui Branch"}}
		resp, body := op.post("/compose", form)
		return strings.TrimPrefix(wantRedirect(t, "compose "+text, resp, body, "/batches/"), "/batches/")
	}
	held := func(id string) []models.BatchMessage {
		t.Helper()
		out, err := c.store.MessagesOfBatch(ctx, id, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 3 {
			t.Fatalf("batch %s has %d messages, want 3 (the two branches)", id, len(out))
		}
		return out
	}

	t.Run("approve", func(t *testing.T) {
		id := compose("Branch audit tomorrow")
		for _, m := range held(id) {
			if m.Status != models.StatusPending || m.NextAttemptAt != nil || m.TaskID != "" {
				t.Fatalf("held message %+v, want pending with no due time and no task", m)
			}
		}
		_, dash := viewer.get("/")
		wantContains(t, "dashboard", dash, `id="awaiting-approval"`, "1 batch waits for approval", `href="/batches/`+id+`"`)
		_, page := op.get("/batches/" + id)
		wantContains(t, "maker's batch page", page, "Waiting for approval", "You made this batch")
		wantNotContains(t, "maker's batch page", page, `action="/batches/`+id+`/approve"`)
		_, page = viewer.get("/batches/" + id)
		wantNotContains(t, "viewer's batch page", page, `action="/batches/`+id+`/approve"`)
		resp, body := op.post("/batches/"+id+"/approve", nil)
		wantStatus(t, "maker approves", resp, body, http.StatusForbidden)

		_, page = admin.get("/batches/" + id)
		wantContains(t, "checker's batch page", page, `action="/batches/`+id+`/approve"`, `action="/batches/`+id+`/reject"`,
			"It goes to 3 people", "Branch audit tomorrow")
		resp, body = admin.post("/batches/"+id+"/approve", nil)
		wantRedirect(t, "approve", resp, body, "/batches/"+id)
		for _, m := range held(id) {
			if m.Status == models.StatusCancelled || (m.Status == models.StatusPending && (m.NextAttemptAt == nil || m.TaskID == "")) {
				t.Errorf("approved message %+v, want due with a task", m)
			}
		}
		if a := c.lastAudit("batch.approve"); a.Actor != adminUser || a.TargetID != id {
			t.Errorf("audit %+v", a)
		}
		_, page = admin.get("/batches/" + id)
		wantContains(t, "approved batch page", page, "Approved by "+adminUser)
	})

	t.Run("reject", func(t *testing.T) {
		id := compose("Wrong audience")
		// A reason left empty is refused where it was typed, not dropped in silence.
		resp, body := admin.post("/batches/"+id+"/reject", url.Values{"reason": {"  "}})
		wantStatus(t, "reject without a reason", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "reject without a reason", body, `id="error-reason"`, "give a reason of 1 to 200 characters", "Waiting for approval")
		if b, _ := c.store.BatchByID(ctx, id); b.Approval != models.ApprovalAwaiting {
			t.Fatalf("a rejection without a reason changed the batch to %q", b.Approval)
		}
		resp, body = admin.post("/batches/"+id+"/reject", url.Values{"reason": {"wrong audience"}})
		wantRedirect(t, "reject", resp, body, "/batches/"+id)
		for _, m := range held(id) {
			if m.Status != models.StatusCancelled {
				t.Errorf("rejected batch's message is %s, want cancelled", m.Status)
			}
		}
		_, page := admin.get("/batches/" + id)
		wantContains(t, "rejected batch page", page, "Rejected by "+adminUser, "wrong audience", "Rejected batch "+id)
		resp, body = admin.post("/batches/"+id+"/approve", nil)
		wantRedirect(t, "approve after reject", resp, body, "/batches/"+id)
		_, page = admin.get("/batches/" + id)
		wantContains(t, "approve after reject", page, "This batch was already decided")
		if b, _ := c.store.BatchByID(ctx, id); b.Approval != models.ApprovalRejected {
			t.Errorf("approve after a rejection changed the batch to %q", b.Approval)
		}
	})

	t.Run("off", func(t *testing.T) {
		resp, body := admin.post("/settings", url.Values{"approval_threshold": {"0"}})
		wantRedirect(t, "threshold 0", resp, body, "/settings")
		id := compose("No approval needed")
		for _, m := range held(id) {
			if m.NextAttemptAt == nil {
				t.Errorf("message %s of a batch that needs no approval is held", m.ID)
			}
		}
	})
}
