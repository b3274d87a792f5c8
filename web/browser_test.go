package web_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/chromedp"

	"herald/internal/testenv"
	"herald/models"
	"herald/sending"
	"herald/tasks"
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
		if err := waitFor(ctx, `#template-preview`, "Body: uses undeclared variable owner"); err != nil {
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
		if err := waitFor(ctx, `#compose-preview`, "Recipients: tick at least one person"); err != nil {
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

// TestBrowserPagesKeepToTheCSP loads the console's pages and Asynqmon's in Chromium under
// their Content-Security-Policy, lets their htmx parts fetch and swap, and fails on any
// violation the browser reports.
func TestBrowserPagesKeepToTheCSP(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(adminUser)
	msgs := c.send(nil, "E2001", "E2002")
	c.finish(msgs["E2001"].ID, models.Outcome{Status: models.StatusSent, CountsAttempt: true, Called: true, ProviderMessageID: "p-1"})
	c.useLimits("sandbox", sending.Limits{PerMinute: 10, PerHour: 100}, 4)
	c.integrationWithEvents("csp")
	c.heartbeatMissed("csp", "csp-policy")
	ctx := testenv.Chrome(t)

	reported := listenCSPViolations(ctx)
	pause := func(d time.Duration) chromedp.Action { return chromedp.Sleep(d) }
	q := chromedp.ByQuery
	steps := []struct {
		name    string
		actions []chromedp.Action
	}{
		{"login", []chromedp.Action{cdplog.Enable(), chromedp.Navigate(c.url + "/login"), chromedp.WaitVisible(`#username`, q),
			chromedp.SendKeys(`#username`, adminUser, q), chromedp.SendKeys(`#password`, testPassword, q),
			chromedp.Submit(`#password`, q), chromedp.WaitVisible(`header.topbar`, q)}},
		// The dashboard refreshes itself every 2 s.
		{"dashboard", []chromedp.Action{chromedp.Navigate(c.url + "/"), chromedp.WaitVisible(`#dashboard`, q), pause(2500 * time.Millisecond)}},
		{"compose", []chromedp.Action{chromedp.Navigate(c.url + "/compose"), chromedp.WaitVisible(`#text`, q),
			chromedp.SetValue(`#template`, "task-overdue", q), chromedp.WaitVisible(`input[name="variables.task"]`, q),
			chromedp.Click(`button[hx-post="/compose/preview"]`, q), chromedp.WaitVisible(`#compose-preview`, q), pause(300 * time.Millisecond)}},
		{"batch", []chromedp.Action{chromedp.Navigate(c.url + "/batches/" + msgs["E2001"].BatchID),
			chromedp.WaitVisible(`#batch-progress svg`, q), pause(1500 * time.Millisecond)}},
		{"messages", []chromedp.Action{chromedp.Navigate(c.url + "/messages"), chromedp.WaitVisible(`main`, q)}},
		{"message", []chromedp.Action{chromedp.Navigate(c.url + "/messages/" + msgs["E2001"].ID), chromedp.WaitVisible(`main`, q)}},
		{"staff", []chromedp.Action{chromedp.Navigate(c.url + "/recipients"), chromedp.WaitVisible(`main`, q)}},
		{"staff import", []chromedp.Action{chromedp.Navigate(c.url + "/recipients/import"), chromedp.WaitVisible(`#csv`, q)}},
		{"duty", []chromedp.Action{chromedp.Navigate(c.url + "/duty"), chromedp.WaitVisible(`#duty-week`, q)}},
		{"template", []chromedp.Action{chromedp.Navigate(c.url + "/templates/task-overdue/edit"), chromedp.WaitVisible(`#body`, q),
			chromedp.SendKeys(`#body`, "x", q), pause(800 * time.Millisecond)}},
		{"accounts", []chromedp.Action{chromedp.Navigate(c.url + "/accounts"), chromedp.WaitVisible(`#account-usage`, q), pause(2500 * time.Millisecond)}},
		{"account test", []chromedp.Action{chromedp.Navigate(c.url + "/accounts/sandbox/edit"),
			chromedp.Click(`button.secondary .htmx-indicator`, q), chromedp.WaitVisible(`#probe-result`, q), pause(500 * time.Millisecond)}},
		{"users", []chromedp.Action{chromedp.Navigate(c.url + "/users"), chromedp.WaitVisible(`main`, q)}},
		{"api keys", []chromedp.Action{chromedp.Navigate(c.url + "/api-keys"), chromedp.WaitVisible(`main`, q)}},
		{"audit", []chromedp.Action{chromedp.Navigate(c.url + "/audit"), chromedp.WaitVisible(`main`, q)}},
		{"integrations", []chromedp.Action{chromedp.Navigate(c.url + "/integrations"), chromedp.WaitVisible(`#integrations`, q)}},
		{"integration", []chromedp.Action{chromedp.Navigate(c.url + "/integrations/csp"), chromedp.WaitVisible(`#events`, q),
			chromedp.Click(`#events summary`, q), chromedp.WaitVisible(`#events pre`, q)}},
		// "Add a route" posts the form and comes back with one more row.
		{"integration form", []chromedp.Action{chromedp.Navigate(c.url + "/integrations/new"), chromedp.WaitVisible(`#integration-form`, q),
			chromedp.SendKeys(`#name`, "csp-new", q), chromedp.Click(`button[name="more"][value="route"]`, q),
			chromedp.WaitVisible(`select[name="routes[1].policy"]`, q)}},
		{"integration token", []chromedp.Action{chromedp.Submit(`#name`, q), chromedp.WaitVisible(`#integration-token`, q),
			chromedp.Click(`#snippet-grafana summary`, q), chromedp.WaitVisible(`#snippet-grafana dl`, q)}},
		{"heartbeats", []chromedp.Action{chromedp.Navigate(c.url + "/heartbeats"), chromedp.WaitVisible(`#heartbeats`, q)}},
		{"heartbeat form", []chromedp.Action{chromedp.Navigate(c.url + "/heartbeats/new"), chromedp.WaitVisible(`#heartbeat-form`, q),
			chromedp.SendKeys(`#name`, "csp-new", q), chromedp.SetValue(`select[name="route.policy"]`, "csp-policy", q),
			chromedp.SetValue(`select[name="route.platform"]`, "sandbox", q)}},
		{"heartbeat token", []chromedp.Action{chromedp.Submit(`#name`, q), chromedp.WaitVisible(`#heartbeat-token`, q),
			chromedp.Click(`#snippet-watchdog summary`, q), chromedp.WaitVisible(`#watchdog-yml`, q)}},
		{"password", []chromedp.Action{chromedp.Navigate(c.url + "/password"), chromedp.WaitVisible(`#new_password`, q)}},
		// Asynqmon's React app renders its queue list from its API.
		{"monitoring", []chromedp.Action{chromedp.Navigate(c.url + "/monitoring/"), chromedp.WaitVisible(`#root table`, q), pause(time.Second)}},
		{"monitoring queue", []chromedp.Action{chromedp.Navigate(c.url + "/monitoring/queues/normal"),
			chromedp.ActionFunc(func(ctx context.Context) error { return waitFor(ctx, "#root", "Queue size") }), pause(time.Second)}},
	}
	for _, step := range steps {
		if err := chromedp.Run(ctx, step.actions...); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if v := reported(); len(v) > 0 {
			t.Fatalf("after %s, the browser reports Content-Security-Policy violations:\n%s", step.name, strings.Join(v, "\n"))
		}
	}

	// The check itself: an inline style attribute is refused and reported.
	if err := chromedp.Run(ctx, chromedp.Navigate(c.url+"/"), chromedp.WaitVisible(`#dashboard`, q),
		chromedp.Evaluate(`document.body.setAttribute("style", "color: red")`, nil), pause(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if v := reported(); len(v) == 0 {
		t.Error("an inline style attribute was not reported: the violation listener hears nothing")
	}
}

// listenCSPViolations collects the Content-Security-Policy violations the browser of
// ctx reports (each refusal is a security message in its log, once cdplog.Enable has
// run); the function returns those reported so far.
func listenCSPViolations(ctx context.Context) func() []string {
	var mu sync.Mutex
	var violations []string
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*cdplog.EventEntryAdded); ok &&
			(e.Entry.Source == cdplog.SourceSecurity || strings.Contains(e.Entry.Text, "Content Security Policy")) {
			mu.Lock()
			violations = append(violations, e.Entry.URL+": "+e.Entry.Text)
			mu.Unlock()
		}
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), violations...)
	}
}

// useLimits gives an account limits and uses n admissions of them, so its usage bars
// have something to show.
func (c *console) useLimits(account string, limits sending.Limits, n int) {
	c.t.Helper()
	ctx := context.Background()
	a, err := c.store.Sending().AccountByName(ctx, account)
	if err != nil {
		c.t.Fatal(err)
	}
	a.Limits = limits
	if err := c.store.Sending().SaveAccount(ctx, a); err != nil {
		c.t.Fatal(err)
	}
	for i := 0; i < n; {
		d, err := c.limiter.Acquire(ctx, a.ID, limits, "E2001", "normal", fmt.Sprint("use-", i))
		switch {
		case err == nil && d.Allowed:
			i++
		// An answer that came back late on a loaded machine is refused and asked again,
		// as the workers do.
		case err == nil && d.Window == tasks.WindowLate:
		default:
			c.t.Fatalf("use %s's limits: %+v, %v", account, d, err)
		}
	}
}
