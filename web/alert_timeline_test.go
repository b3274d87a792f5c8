package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"herald/alert"
	"herald/audit"
	"herald/dispatch"
	"herald/kernel"
	"herald/sending"
)

// twoStepAlert opens an alert to E2001 under a policy of two steps (E1001, then
// E1003), fires both and lets its closing check find nobody answered, the clock moved
// on and back: its notices are in four batches (the send, each step, the notice that
// nobody answered).
func (c *console) twoStepAlert() *alert.Alert {
	c.t.Helper()
	ctx := c.t.Context()
	d := c.h.Dispatch
	if _, err := d.Alerts().CreatePolicy(ctx, audit.System("test"), alert.EscalationPolicy{Name: "timeline",
		Steps: []alert.PolicyStep{{Targets: []string{"E1001"}, Wait: "10m"}, {Targets: []string{"E1003"}, Wait: "10m"}}}); err != nil {
		c.t.Fatal(err)
	}
	a, _ := c.ackAlertWith(func(r *dispatch.Request) { r.Ack.Policy = "timeline" }, "E2001")
	for _, after := range []time.Duration{10*time.Minute + time.Second, 20*time.Minute + 2*time.Second, 30*time.Minute + 3*time.Second} {
		c.clockOffset.Store(int64(after))
		if _, err := d.Alerts().FireDueAlertSteps(ctx, kernel.Now().Add(after)); err != nil {
			c.t.Fatal(err)
		}
	}
	c.clockOffset.Store(0)
	return c.alert(a.ID)
}

// In the Chinese console the alert page is one timeline of the alert's notices,
// whichever batch carries them: the first notice, each step's with its person's name
// and id, the notice that nobody answered; and the compose preview names each wait a
// send will meet: approval, a silence, the account's quiet hours.
func TestBrowserAlertTimelineAndComposeWaits(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	a := c.twoStepAlert()
	if a.State != alert.AlertExhausted {
		t.Fatalf("the alert is %s after both steps, want exhausted", a.State)
	}
	c.holdByCounterSilence(c.send(nil, "E2002")["E2002"].ID)
	acct, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().In(c.loc)
	acct.QuietHours = sending.QuietHours{Start: now.Add(-time.Hour).Format("15:04"), End: now.Add(2 * time.Hour).Format("15:04")}
	if err := c.store.Sending().SaveAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	c.accounts.Forget()
	if err := c.store.Intake().SetApprovalThreshold(ctx, 1, "test"); err != nil {
		t.Fatal(err)
	}
	c.h.Dispatch.ForgetThreshold()

	bctx := c.chineseBrowser(t, operatorUser)
	q := chromedp.ByQuery
	var rows [][]string
	if err := chromedp.Run(bctx,
		chromedp.Navigate(fmt.Sprintf("%s/alerts/%d", c.url, a.ID)),
		chromedp.WaitVisible(`#alert-timeline`, q),
		chromedp.Evaluate(`[...document.querySelectorAll('#alert-timeline tbody tr')].map(tr => [...tr.cells].slice(1, 4).map(td => td.textContent.trim().replace(/\s+/g, ' ')))`, &rows),
	); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"首次通知", "Liu Yang（E2001）", "沙箱"},
		{"第 1 轮第 1 步", "Li Wei（E1001）", "沙箱"},
		{"第 1 轮第 2 步", "Zhang Min（E1003）", "沙箱"},
		{"后续通知", "Zhang Min（E1003）", "沙箱"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("the alert's timeline (-want +got):\n%s", diff)
	}

	var waits map[string]string
	var receive string
	if err := chromedp.Run(bctx,
		chromedp.Navigate(c.url+"/compose"),
		chromedp.WaitVisible(`#compose-list`, q),
		chromedp.SendKeys(`#text`, "日终批量", q),
		chromedp.Click(fmt.Sprintf(`input[name="recipient"][value="%d"]`, c.recipient("E2001").ID), q),
		chromedp.Click(fmt.Sprintf(`input[name="recipient"][value="%d"]`, c.recipient("E2003").ID), q),
		chromedp.Click(`button[hx-post="/compose/preview"]`, q),
		chromedp.WaitVisible(`#preview-wait-silence`, q),
		chromedp.Evaluate(`Object.fromEntries([...document.querySelectorAll('[id^=preview-wait-] strong')].map(e => [e.parentElement.id, e.textContent]))`, &waits),
		chromedp.Text(`#compose-preview p`, &receive, q),
	); err != nil {
		t.Fatal(err)
	}
	wantWaits := map[string]string{"preview-wait-approval": "需要审批", "preview-wait-silence": "静默", "preview-wait-quiet": "免打扰"}
	if diff := cmp.Diff(wantWaits, waits); diff != "" {
		t.Errorf("the preview's waits (-want +got):\n%s", diff)
	}
	if strings.Contains(receive, "立即发送") || !strings.Contains(receive, "须先经过下列等待") {
		t.Errorf("the preview says %q of when the send goes, with three waits", receive)
	}
}
