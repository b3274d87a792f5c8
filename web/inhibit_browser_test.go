package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// In Chinese at 390 px, an admin follows the alerts page to the inhibition rules, finds none, makes one whose target is
// its source and is told so beside the target, mends it and sees it listed, then deletes
// it after confirming; then makes a recurring silence, first with a window that ends
// where it starts (told so beside the end), then 23:30–02:00 on working days, and sees
// its next five windows in the list. No page scrolls sideways.
func TestBrowserInhibitRuleAndRecurringSilenceForms(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := c.chineseBrowser(t, adminUser)
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go chromedp.Run(ctx, page.HandleJavaScriptDialog(true))
		}
	})
	q := chromedp.ByQuery
	const width = 390
	noSideways := func(where string) {
		t.Helper()
		var scrollWidth int64
		if err := chromedp.Run(ctx, chromedp.Evaluate(`document.scrollingElement.scrollWidth`, &scrollWidth)); err != nil || scrollWidth > width {
			t.Errorf("%s: %d px wide (%v)", where, scrollWidth, err)
		}
	}
	if err := chromedp.Run(ctx, chromedp.EmulateViewport(width, 900), chromedp.Navigate(c.url+"/alerts"),
		chromedp.Click(`#inhibit-rules-link`, q), chromedp.WaitVisible(`#inhibit-rules-empty`, q), chromedp.Click(`#new-inhibit-rule`, q), chromedp.WaitVisible(`#inhibit-rule-form`, q),
		chromedp.SendKeys(`#name`, "db-down", q), chromedp.SendKeys(`#source`, "severity=critical", q),
		chromedp.SendKeys(`#target`, "severity=critical", q), chromedp.SendKeys(`#equal`, "cluster", q), chromedp.Submit(`#name`, q),
	); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, `#error-target`, "目标与源相同"); err != nil {
		t.Fatalf("a rule that inhibits itself: %v", err)
	}
	noSideways("the rule form with its error")
	if err := chromedp.Run(ctx, chromedp.SetValue(`#target`, "severity=warning\nlabel:alertname=~Slow.*", q), chromedp.Submit(`#name`, q),
		chromedp.WaitVisible(`tr[data-inhibit-rule="db-down"]`, q)); err != nil {
		t.Fatalf("saving the mended rule: %v", err)
	}
	var row string
	if err := chromedp.Run(ctx, chromedp.Text(`tr[data-inhibit-rule="db-down"]`, &row, q)); err != nil || !strings.Contains(row, `alertname=~"Slow.*"`) {
		t.Errorf("the listed rule %q (%v)", row, err)
	}
	noSideways("the rules list")
	if err := chromedp.Run(ctx, chromedp.Click(`tr[data-inhibit-rule="db-down"] a`, q), chromedp.WaitVisible(`#delete-inhibit-rule`, q),
		chromedp.Click(`#delete-inhibit-rule`, q), chromedp.WaitVisible(`#inhibit-rules-empty`, q)); err != nil {
		t.Fatalf("deleting the rule: %v", err)
	}
	if n := c.countRows("inhibit_rules"); n != 0 {
		t.Errorf("%d rules left after the delete", n)
	}

	if err := chromedp.Run(ctx, chromedp.Navigate(c.url+"/silences/new"), chromedp.WaitVisible(`#silence-form`, q),
		chromedp.SetValue(`#name_0`, "priority", q), chromedp.SetValue(`#value_0`, "low", q),
		chromedp.Click(`#mode-recurring`, q), chromedp.WaitVisible(`#schedule_days`, q),
		chromedp.SetValue(`#schedule_end`, "23:30", q), chromedp.SetValue(`#ends_at`, "", q),
		chromedp.SendKeys(`#comment`, "日终批处理", q), chromedp.Submit(`#comment`, q),
	); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, `#error-schedule\.end`, "不能与开始时刻相同"); err != nil {
		t.Fatalf("a window ending where it starts: %v", err)
	}
	noSideways("the recurring silence form with its error")
	var days string
	if err := chromedp.Run(ctx, chromedp.Value(`#schedule_days`, &days, q)); err != nil || days != "workdays" {
		t.Errorf("the days kept across the error: %q (%v)", days, err)
	}
	var windows []string
	saving := time.Now()
	if err := chromedp.Run(ctx, chromedp.SetValue(`#schedule_end`, "02:00", q), chromedp.Submit(`#comment`, q),
		chromedp.WaitVisible(`ul.occurrences`, q),
		chromedp.Evaluate(`[...document.querySelectorAll('ul.occurrences li')].map(li => li.textContent)`, &windows)); err != nil {
		t.Fatalf("saving the recurring silence: %v", err)
	}
	// The silence holds from when it was saved: saved inside a window (23:30 to 02:00 in
	// Shanghai), its first window starts then instead of at 23:30.
	inside := func(at time.Time) bool {
		at = at.In(c.loc)
		return at.Hour() == 23 && at.Minute() >= 30 || at.Hour() < 2
	}
	savedInside := inside(saving) || inside(time.Now())
	if len(windows) != 5 {
		t.Fatalf("next windows %q, want five from 23:30 to 02:00", windows)
	}
	for i, w := range windows {
		if !strings.Contains(w, "→ 02:00") || !strings.Contains(w, "23:30") && !(i == 0 && savedInside) {
			t.Errorf("next window %d %q, want from 23:30 to 02:00 (all %q)", i, w, windows)
		}
	}
	noSideways("the silences list")
}
