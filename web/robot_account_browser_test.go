package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"herald/channels"
	"herald/internal/testenv"
)

// TestBrowserRobotAccountForm creates a DingTalk group robot account with a pool of two
// robots through the console's account form, at 1366, 768 and 390 px: the platform's
// fields come with its choice, the pool goes in a box of several lines, the page never
// scrolls sideways, and the account is saved with both robots, its secret sealed and
// the robot's documented limit.
func TestBrowserRobotAccountForm(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(adminUser)
	ctx := testenv.Chrome(t)
	q := chromedp.ByQuery
	browserSignIn(t, ctx, c, adminUser)
	pool := "https://oapi.dingtalk.com/robot/send?access_token=aaa111\nhttps://oapi.dingtalk.com/robot/send?access_token=bbb222"
	for _, width := range []int{1366, 768, 390} {
		name := fmt.Sprintf("ops-robot-%d", width)
		var formWidth, saved int
		err := chromedp.Run(ctx,
			chromedp.EmulateViewport(int64(width), 900),
			chromedp.Navigate(c.url+"/accounts/new"),
			chromedp.WaitVisible(`#platform`, q),
			chromedp.SendKeys(`#name`, name, q),
			chromedp.Evaluate(`(() => { const s = document.querySelector('#platform'); s.value = 'dingtalk_bot';
				s.dispatchEvent(new Event('change', {bubbles: true})); return true })()`, nil),
			chromedp.WaitVisible(`textarea[name="config.webhook_url"]`, q),
			// The pool is set whole rather than typed: a keystroke at a time it takes
			// seconds, and what is checked is the saved pool, not the typing.
			chromedp.SetValue(`textarea[name="config.webhook_url"]`, pool, q),
			chromedp.SendKeys(`input[name="config.secret"]`, "SECrobotsecret42", q),
			chromedp.SendKeys(`input[name="config.keyword"]`, "告警", q),
			chromedp.Evaluate(`document.documentElement.scrollWidth`, &formWidth),
			chromedp.Submit(`#name`, q),
			chromedp.WaitVisible(`#account-usage`, q),
			chromedp.Evaluate(`document.documentElement.scrollWidth`, &saved),
		)
		if err != nil {
			t.Fatalf("at %d px: %v", width, err)
		}
		if formWidth > width || saved > width {
			t.Errorf("at %d px the form is %d px wide and the list %d px: the page scrolls sideways", width, formWidth, saved)
		}
		a, err := c.store.Sending().AccountByName(context.Background(), name)
		if err != nil {
			t.Fatalf("at %d px: the account was not saved: %v", width, err)
		}
		if got := channels.RobotURLs(a.Config); len(got) != 2 || a.Config["secret"] != "SECrobotsecret42" || a.Config["keyword"] != "告警" {
			t.Errorf("at %d px: saved %d robots, secret %t, keyword %q", width, len(got), a.Config["secret"] == "SECrobotsecret42", a.Config["keyword"])
		}
		if a.Limits.PerMinute != 20 {
			t.Errorf("at %d px: per_minute %d, want DingTalk robots' 20", width, a.Limits.PerMinute)
		}
		var page string
		if err := chromedp.Run(ctx, chromedp.Navigate(c.url+"/accounts/"+name+"/edit"), chromedp.WaitVisible(`#platform`, q),
			chromedp.OuterHTML(`main`, &page, q)); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(page, "aaa111") || strings.Contains(page, "SECrobotsecret42") {
			t.Errorf("at %d px: the edit form shows a robot's key or secret", width)
		}
	}
}
