package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"herald/internal/testenv"
)

// waitFor polls an element's text until it contains want.
func waitFor(ctx context.Context, sel, want string) error {
	var text string
	for {
		err := chromedp.Run(ctx, chromedp.Text(sel, &text, chromedp.ByQuery))
		if err == nil && strings.Contains(text, want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %q in %s: last text %q: %w", want, sel, text, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestBrowserConsoleInteractions checks in Chromium the console behaviour that lives in
// htmx attributes: the template preview following the keyboard, the compose form
// swapping in a template's variables and previewing who receives, and the duty grid
// edited in place.
func TestBrowserConsoleInteractions(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(operatorUser)
	ctx := testenv.Chrome(t)
	if err := chromedp.Run(ctx,
		chromedp.Navigate(c.url+"/login"),
		chromedp.WaitVisible(`#username`, chromedp.ByQuery),
		chromedp.SendKeys(`#username`, operatorUser, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, testPassword, chromedp.ByQuery),
		chromedp.Submit(`#password`, chromedp.ByQuery),
		chromedp.WaitVisible(`header.topbar`, chromedp.ByQuery),
	); err != nil {
		t.Fatalf("log in: %v", err)
	}

	// Keys typed into a field land before its text: the caret starts there.
	t.Run("template preview re-renders as you type", func(t *testing.T) {
		err := chromedp.Run(ctx,
			chromedp.Navigate(c.url+"/templates/task-overdue/edit"),
			chromedp.WaitVisible(`#body`, chromedp.ByQuery),
			chromedp.SendKeys(`#body`, "{{.owner}}: ", chromedp.ByQuery),
		)
		if err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, `#template-preview`, "body uses undeclared variable owner"); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Run(ctx, chromedp.SendKeys(`#variables`, "owner, ", chromedp.ByQuery),
			chromedp.SendKeys(`#samples`, "owner = Zhang Min\n", chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, `#template-preview`, "Zhang Min: Overdue: sample task. Please handle it today."); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("compose swaps in template variables and previews receivers", func(t *testing.T) {
		err := chromedp.Run(ctx,
			chromedp.Navigate(c.url+"/compose"),
			chromedp.WaitVisible(`#text`, chromedp.ByQuery),
			// SetValue fires input and change itself; a second change would
			// swap the content twice and pull the field out from under SendKeys.
			chromedp.SetValue(`#template`, "task-overdue", chromedp.ByQuery),
			chromedp.WaitVisible(`input[name="variables.task"]`, chromedp.ByQuery),
			chromedp.SendKeys(`input[name="variables.task"]`, "Reconcile ledger 42", chromedp.ByQuery),
			chromedp.Click(`button[hx-post="/compose/preview"]`, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatal(err)
		}
		// A 422 answer is swapped in too (htmx-config in the page head).
		if err := waitFor(ctx, `#compose-preview`, "name at least one recipient, or set to_on_duty"); err != nil {
			t.Fatal(err)
		}
		err = chromedp.Run(ctx,
			chromedp.Click(fmt.Sprintf(`input[name="recipient"][value="%d"]`, c.recipient("E2001").ID), chromedp.ByQuery),
			chromedp.Click(fmt.Sprintf(`input[name="recipient"][value="%d"]`, c.recipient("E2002").ID), chromedp.ByQuery),
			chromedp.Click(`button[hx-post="/compose/preview"]`, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, `#compose-preview`, "2 people receive"); err != nil {
			t.Fatal(err)
		}
		var textareas int
		if err := chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll('#text').length`, &textareas)); err != nil || textareas != 0 {
			t.Errorf("free-text field still on the form with a template chosen (%d, %v)", textareas, err)
		}
	})

	t.Run("duty grid edits in place", func(t *testing.T) {
		err := chromedp.Run(ctx,
			chromedp.Navigate(c.url+"/duty"),
			chromedp.WaitVisible(`#duty-week`, chromedp.ByQuery),
			chromedp.SetValue(`[data-weekday="7"] form.add select`, "E1001", chromedp.ByQuery),
			chromedp.Click(`[data-weekday="7"] form.add button`, chromedp.ByQuery),
		)
		if err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, `[data-weekday="7"] .people`, "Li Wei"); err != nil {
			t.Fatal(err)
		}
		var url string
		if err := chromedp.Run(ctx, chromedp.Location(&url)); err != nil || !strings.HasSuffix(url, "/duty") {
			t.Errorf("the page navigated to %q (%v); the grid should update in place", url, err)
		}
	})
}
