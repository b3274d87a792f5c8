package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/chromedp"

	"herald/internal/testenv"
)

// waitTrue polls a script's boolean until it is true.
func waitTrue(ctx context.Context, what, script string) error {
	for {
		var ok bool
		if err := chromedp.Run(ctx, chromedp.Evaluate(script, &ok)); err == nil && ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// An htmx request a person makes shows that it is working, wherever it is: while the
// answer is held back, the button pressed is disabled, the element that sent it busy,
// and the page's working indicator shows (after 300 ms); once the answer comes, all of
// it is undone. A button that sends by itself and a form's submit button alike, within
// the Content-Security-Policy.
func TestBrowserSlowRequestsShowThatTheyAreWorking(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(operatorUser)
	ctx := testenv.Chrome(t)
	reported := listenCSPViolations(ctx)
	q := chromedp.ByQuery
	browserSignIn(t, ctx, c, operatorUser, cdplog.Enable())
	for _, tc := range []struct {
		name, page, path string
		// button is the button pressed; sender the element that sends the request.
		button, sender string
	}{
		{"compose preview button", "/compose", "/compose/preview", `button[hx-post="/compose/preview"]`, `button[hx-post="/compose/preview"]`},
		{"duty roster form", "/duty", "/duty/roster", `form[hx-get="/duty/roster"] button[type=submit]`, `form[hx-get="/duty/roster"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := chromedp.Run(ctx, chromedp.Navigate(c.url+tc.page), chromedp.WaitVisible(tc.button, q)); err != nil {
				t.Fatal(err)
			}
			state := fmt.Sprintf(`(function () {
				var b = document.querySelector(%q), s = document.querySelector(%q), w = getComputedStyle(document.getElementById("working"));
				return {disabled: b.disabled, busy: s.getAttribute("aria-busy") === "true", shown: w.visibility === "visible" && w.opacity === "1"};
			})()`, tc.button, tc.sender)
			release := c.hold(tc.path)
			if err := chromedp.Run(ctx, chromedp.Click(tc.button, q)); err != nil {
				t.Fatal(err)
			}
			if err := waitTrue(ctx, "the request to show that it is working", "(function(s){return s.disabled && s.busy && s.shown})("+state+")"); err != nil {
				t.Fatal(err)
			}
			var text string
			if err := chromedp.Run(ctx, chromedp.Text(`#working`, &text, q)); err != nil || !strings.Contains(text, "Working") {
				t.Errorf("the indicator reads %q (%v), want Working…", text, err)
			}
			release()
			if err := waitTrue(ctx, "the page to be done working", "(function(s){return !s.disabled && !s.busy && !s.shown})("+state+")"); err != nil {
				t.Fatal(err)
			}
		})
	}
	if v := reported(); len(v) > 0 {
		t.Errorf("Content-Security-Policy violations:\n%s", strings.Join(v, "\n"))
	}
}
