package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"herald/alert"
	"herald/internal/testenv"
	"herald/sending"
)

// An admin writes, in the policy editor at 1366, 768 and 390 px, a policy whose second
// step goes by another account and advances on no answer where it may: a step naming an
// account nobody has is refused beside the steps, naming its line, with nothing saved;
// the step written right is saved with its via, and the editor shows it back as written.
func TestBrowserPolicyEditorStepVia(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(adminUser)
	ctx := context.Background()
	if err := c.store.Sending().SaveAccount(ctx, &sending.Account{Name: "sandbox-night", Platform: "sandbox", Enabled: true,
		MaxAttempts: 3, Config: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	bctx := testenv.Chrome(t)
	reported := listenCSPViolations(bctx)
	q := chromedp.ByQuery
	browserSignIn(t, bctx, c, adminUser, cdplog.Enable())
	for _, width := range []int{1366, 768, 390} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			name := fmt.Sprintf("night-%d", width)
			var scrollWidth int
			var hint string
			if err := chromedp.Run(bctx,
				chromedp.EmulateViewport(int64(width), 900),
				chromedp.Navigate(c.url+"/escalation-policies/new"),
				chromedp.WaitVisible(`#steps`, q),
				chromedp.Text(`#steps-via-hint`, &hint, q),
				chromedp.SetValue(`#name`, name, q),
				chromedp.SetValue(`#steps`, "E1003 | 10m\nE1004 | 10m | no-such-account", q),
				chromedp.Submit(`#steps`, q),
				chromedp.WaitVisible(`.field-error`, q),
			); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(hint, "advance_on_no_answer") {
				t.Errorf("the steps' hint reads %q, want how a step says it goes by voice", hint)
			}
			var problem string
			if err := chromedp.Run(bctx, chromedp.Text(`.field-error`, &problem, q)); err != nil ||
				!strings.Contains(problem, "Line 2") || !strings.Contains(problem, "no-such-account") {
				t.Errorf("the problem reads %q (%v), want line 2's unknown account", problem, err)
			}
			if _, err := alert.Of(c.store).PolicyByName(ctx, name); err == nil {
				t.Fatal("a refused policy was saved")
			}
			if err := chromedp.Run(bctx,
				chromedp.SetValue(`#steps`, "E1003 | 10m\nE1004 | 10m | sandbox-night", q),
				chromedp.Submit(`#steps`, q),
				chromedp.WaitVisible(`a[href="/escalation-policies/new"]`, q),
				chromedp.Evaluate(`document.documentElement.scrollWidth`, &scrollWidth),
			); err != nil {
				t.Fatal(err)
			}
			if scrollWidth > width {
				t.Errorf("the policies page is %d px wide on a %d px screen", scrollWidth, width)
			}
			p, err := alert.Of(c.store).PolicyByName(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			want := []alert.PolicyStep{{Targets: []string{"E1003"}, Wait: "10m"}, {Targets: []string{"E1004"}, Wait: "10m", Via: "sandbox-night"}}
			if diff := cmp.Diff(want, p.Steps); diff != "" {
				t.Errorf("steps saved (-want +got):\n%s", diff)
			}
			var steps string
			if err := chromedp.Run(bctx,
				chromedp.Navigate(c.url+"/escalation-policies/"+name+"/edit"),
				chromedp.WaitVisible(`#steps`, q),
				chromedp.Value(`#steps`, &steps, q),
				chromedp.Evaluate(`document.documentElement.scrollWidth`, &scrollWidth),
			); err != nil {
				t.Fatal(err)
			}
			if steps != "E1003 | 10m\nE1004 | 10m | sandbox-night" {
				t.Errorf("the editor shows the steps as %q", steps)
			}
			if scrollWidth > width {
				t.Errorf("the editor is %d px wide on a %d px screen", scrollWidth, width)
			}
		})
	}
	if v := reported(); len(v) > 0 {
		t.Errorf("Content-Security-Policy violations:\n%s", strings.Join(v, "\n"))
	}
}

// browserSignIn signs user in on the console in the browser, after first (headers,
// logs to enable).
func browserSignIn(t *testing.T, ctx context.Context, c *console, user string, first ...chromedp.Action) {
	t.Helper()
	q := chromedp.ByQuery
	actions := append(first,
		chromedp.Navigate(c.url+"/login"),
		chromedp.WaitVisible(`#username`, q),
		chromedp.SendKeys(`#username`, user, q),
		chromedp.SendKeys(`#password`, testPassword, q),
		chromedp.Submit(`#password`, q),
		chromedp.WaitVisible(`header.topbar`, q),
	)
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("log in: %v", err)
	}
}
