package web_test

import (
	"strings"
	"testing"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"herald/alert"
	"herald/internal/testenv"
)

// A person on duty opens their notice's link on a phone (390 px wide, Chinese) with no
// console session, and taps 我来处理: the alert is theirs, acknowledged via the link.
// Reloading the page after the tap changes nothing. The page fits the screen and keeps
// to the Content-Security-Policy.
func TestBrowserAckLinkOnAPhone(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	a, msgs := c.ackAlert("E2001", "E2002")
	ctx := testenv.Chrome(t)

	reported := listenCSPViolations(ctx)
	q := chromedp.ByQuery
	var scrollWidth int
	err := chromedp.Run(ctx,
		cdplog.Enable(),
		network.Enable(),
		network.SetExtraHTTPHeaders(network.Headers{"Accept-Language": "zh-CN,zh;q=0.9"}),
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(c.url+c.ackPath(msgs["E2001"])),
		chromedp.WaitVisible(`#ack-take`, q),
		chromedp.Evaluate(`document.documentElement.scrollWidth`, &scrollWidth),
	)
	if err != nil {
		t.Fatal(err)
	}
	if scrollWidth > 390 {
		t.Errorf("the page is %d px wide on a 390 px screen", scrollWidth)
	}
	var label string
	if err := chromedp.Run(ctx, chromedp.Text(`#ack-take`, &label, q)); err != nil || label != "我来处理" {
		t.Errorf("the button reads %q (%v), want 我来处理", label, err)
	}
	if err := chromedp.Run(ctx, chromedp.Click(`#ack-take`, q)); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, `#ack-outcome`, "接手此告警，升级通知已停止"); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, `#ack-state`, "已接手"); err != nil {
		t.Fatal(err)
	}
	// The tap landed on the page itself by a GET: reloading it asks nothing, taps
	// nothing again and says the same.
	entries := c.auditCount("alert.acknowledge")
	var outcome string
	if err := chromedp.Run(ctx, chromedp.Reload(), chromedp.WaitVisible(`#ack-outcome`, q), chromedp.Text(`#ack-outcome`, &outcome, q)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(outcome, "你已于") || strings.Contains(outcome, "先于你") {
		t.Errorf("after a reload the page says %q, want that you took it", outcome)
	}
	if n := c.auditCount("alert.acknowledge"); n != entries {
		t.Errorf("reloading wrote %d more acknowledgment entries", n-entries)
	}
	got := c.alert(a.ID)
	if got.State != alert.AlertAcknowledged || got.AcknowledgedBy != "E2001" || got.AcknowledgedVia != alert.AckViaLink {
		t.Errorf("alert after the tap: state %s by %q via %q; want acknowledged by E2001 via link", got.State, got.AcknowledgedBy, got.AcknowledgedVia)
	}
	if v := reported(); len(v) > 0 {
		t.Errorf("Content-Security-Policy violations:\n%s", strings.Join(v, "\n"))
	}
}
