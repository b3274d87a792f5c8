package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"herald/models"
)

// awaitingBatch is a batch the operator composed that awaits approval (threshold 1),
// its id.
func (c *console) awaitingBatch() string {
	c.t.Helper()
	ctx := c.t.Context()
	if err := c.store.Intake().SetApprovalThreshold(ctx, 1, "test"); err != nil {
		c.t.Fatal(err)
	}
	c.h.Dispatch.ForgetThreshold()
	sandbox, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		c.t.Fatal(err)
	}
	resp, body := c.as(operatorUser).post("/compose", url.Values{"account": {fmt.Sprint(sandbox.ID)}, "content.text": {"核对总账"},
		"priority": {"normal"}, "branch": {"Pudong Branch"}})
	id := strings.TrimPrefix(wantRedirect(c.t, "compose", resp, body, "/batches/"), "/batches/")
	if b, err := c.store.BatchByID(ctx, id); err != nil || b.Approval != models.ApprovalAwaiting {
		c.t.Fatalf("batch %s: %+v, %v; want it awaiting approval", id, b, err)
	}
	return id
}

// A maker withdraws their own batch while it awaits approval: its messages are
// cancelled, it leaves the approvers' list, audited; nobody else may withdraw it, and
// a second withdrawal finds it decided.
func TestMakerWithdrawsTheirBatch(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	id := c.awaitingBatch()
	op, admin := c.as(operatorUser), c.as(adminUser)

	_, body := op.get("/batches/" + id)
	wantContains(t, "the maker's batch page", body, `action="/batches/`+id+`/withdraw"`)
	_, body = op.get("/")
	wantContains(t, "the maker's approvals list", body, `action="/batches/`+id+`/withdraw"`)
	_, body = admin.get("/batches/" + id)
	wantNotContains(t, "an approver's batch page", body, `/withdraw"`)

	resp, body := admin.post("/batches/"+id+"/withdraw", nil)
	wantStatus(t, "an approver withdraws", resp, body, http.StatusForbidden)

	resp, body = op.post("/batches/"+id+"/withdraw", nil)
	wantRedirect(t, "withdraw", resp, body, "/batches/"+id)
	b, err := c.store.BatchByID(t.Context(), id)
	if err != nil || b.Approval != models.ApprovalRejected || b.DecisionNote != models.ApprovalWithdrawn || b.DecidedBy != operatorUser {
		t.Fatalf("batch after the withdrawal: %+v, %v", b, err)
	}
	msgs, err := c.store.MessagesOfBatch(t.Context(), id, 10)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("messages %v, %v", msgs, err)
	}
	for _, m := range msgs {
		if m.Status != models.StatusCancelled {
			t.Errorf("message %s is %s after the withdrawal, want cancelled", m.ID, m.Status)
		}
	}
	if e := c.lastAudit("batch.withdraw"); e.Actor != operatorUser || e.ParamMap()["cancelled"] != fmt.Sprint(len(msgs)) {
		t.Errorf("withdrawal audited as %+v", e)
	}
	_, body = admin.get("/")
	wantNotContains(t, "the approvers' list", body, `id="awaiting-approval"`)
	_, body = op.get("/batches/" + id)
	wantContains(t, "the withdrawn batch", body, `id="withdrawn"`)

	resp, body = op.post("/batches/"+id+"/withdraw", nil)
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusConflict {
		t.Errorf("a second withdrawal: %d", resp.StatusCode)
	}
	if n := c.auditCount("batch.withdraw"); n != 1 {
		t.Errorf("%d withdrawals audited, want 1", n)
	}
}

// In a browser (Chinese, phone width), the maker withdraws the batch from the
// dashboard's approvals list, confirming, and lands on the batch withdrawn.
func TestBrowserMakerWithdrawsFromTheApprovalsList(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	id := c.awaitingBatch()
	q := chromedp.ByQuery
	for _, width := range []int64{390, 1366} {
		if width == 1366 {
			id = c.awaitingBatch()
		}
		ctx := c.chineseBrowserWith(t, width, operatorUser, testPassword, `header.topbar`)
		chromedp.ListenTarget(ctx, func(ev any) {
			if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
				go chromedp.Run(ctx, page.HandleJavaScriptDialog(true))
			}
		})
		button := `#awaiting-approval form[action="/batches/` + id + `/withdraw"] button`
		var text string
		err := chromedp.Run(ctx,
			chromedp.Navigate(c.url+"/"),
			chromedp.WaitVisible(button, q),
			chromedp.Text(button, &text, q),
			chromedp.Click(button, q),
			chromedp.WaitVisible(`#withdrawn`, q),
		)
		if err != nil {
			t.Fatalf("%d px: withdraw: %v", width, err)
		}
		if text != "撤回此批次" {
			t.Errorf("%d px: the button reads %q", width, text)
		}
		if b, err := c.store.BatchByID(t.Context(), id); err != nil || b.DecisionNote != models.ApprovalWithdrawn {
			t.Errorf("%d px: batch after the withdrawal: %+v, %v", width, b, err)
		}
	}
}
