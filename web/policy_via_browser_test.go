package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"herald/alert"
	"herald/directory"
	"herald/sending"
)

// In the Chinese console an admin builds a rotation and an escalation policy with the
// people picker and the step editors, typing no id: a person found by the initials of
// their pinyin, a second turn of two people, a step targeting the rotation and a step of
// a person going by another account. A step naming an account nobody has is refused
// beside that step, with nothing saved; what is saved is what was picked, and the edit
// page shows it back by name and id.
func TestBrowserStepEditors(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	if err := c.store.Sending().SaveAccount(ctx, &sending.Account{Name: "sandbox-night", Platform: "sandbox", Enabled: true,
		MaxAttempts: 3, Config: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	if err := c.store.Directory().CreateRecipient(ctx, &directory.Recipient{ExternalID: "E3002", Name: "王芳", OrgType: directory.HeadOffice,
		Department: "IT", Active: true}); err != nil {
		t.Fatal(err)
	}
	bctx := c.chineseBrowser(t, adminUser)
	reported := listenCSPViolations(bctx)
	q := chromedp.ByQuery
	// pick enters a query in the search box search, once htmx has taken the box up (a
	// redrawn row's box is new), and picks the person id from the answer to that query
	// into the row rows. The query is set whole and announced with an input event rather
	// than typed: htmx marks the box while a search is under way, and chromedp's typing
	// reads the element's attributes unguarded against such a change.
	processed := func(sel string) string {
		return `(() => { const e = document.querySelector('` + sel + `'); return !!e && !!e['htmx-internal-data']; })()`
	}
	var ready bool
	// hxClick clicks an htmx button once htmx has taken it up: the editors' buttons are
	// redrawn with their rows, and a click on one not yet processed does nothing.
	hxClick := func(sel string) chromedp.Tasks {
		return chromedp.Tasks{chromedp.Poll(processed(sel), &ready), chromedp.Click(sel, q)}
	}
	pick := func(search, typed, id, row string) chromedp.Tasks {
		found := search + `-found .pick-list[data-q="` + typed + `"] button[data-pick="` + id + `"]`
		return chromedp.Tasks{
			chromedp.Poll(processed(search), &ready),
			chromedp.SetValue(search, typed, q),
			chromedp.Evaluate(`document.querySelector('`+search+`').dispatchEvent(new Event('input', {bubbles: true})); true`, nil),
			chromedp.WaitVisible(found, q),
			hxClick(found),
			chromedp.WaitVisible(row+` [data-picked="`+id+`"]`, q),
		}
	}
	runEach(t, bctx, "the rotation",
		chromedp.Navigate(c.url+"/duty/rotations/new"),
		chromedp.WaitVisible(`#turn-0-q`, q),
		chromedp.SetValue(`#name`, "夜班", q),
		pick(`#turn-0-q`, "wf", "E3002", `#turn-0-people`),
		hxClick(`#add-turn`),
		chromedp.WaitVisible(`#turn-1-q`, q),
		pick(`#turn-1-q`, "E1003", "E1003", `#turn-1-people`),
		pick(`#turn-1-q`, "E1004", "E1004", `#turn-1-people`),
		chromedp.Click(`#save-rotation`, q),
		chromedp.WaitVisible(`#rotations [data-rotation="夜班"]`, q),
	)
	r, err := c.store.Duty().RotationByName(ctx, "夜班")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{{"E3002"}, {"E1003", "E1004"}}, externalIDsOf(t, c, r.Members)); diff != "" {
		t.Errorf("the rotation's turns (-want +got):\n%s", diff)
	}
	var turns string
	if err := chromedp.Run(bctx, chromedp.Text(`#rotations [data-rotation="夜班"]`, &turns, q)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(turns, "王芳（E3002）") {
		t.Errorf("the duty page shows the rotation as %q, want 王芳（E3002）", turns)
	}

	var problem string
	runEach(t, bctx, "the policy",
		chromedp.Navigate(c.url+"/escalation-policies/new"),
		chromedp.WaitVisible(`#step-0 [data-picked="on_duty"]`, q),
		chromedp.SetValue(`#name`, "夜间", q),
		hxClick(`#step-0 [data-picked="on_duty"] button`),
		chromedp.WaitNotPresent(`#step-0 [data-picked="on_duty"]`, q),
		chromedp.SetValue(`select[name="step.0.choice"]`, "rotation:夜班", q),
		hxClick(`#step-0 .inline-pick button`),
		chromedp.WaitVisible(`#step-0 [data-picked="rotation:夜班"]`, q),
		hxClick(`#add-step`),
		chromedp.WaitVisible(`#step-1-q`, q),
		pick(`#step-1-q`, "wf", "E3002", `#step-1-targets`),
		chromedp.SetValue(`input[name="step.1.wait"]`, "5m", q),
		chromedp.SetValue(`input[name="step.1.via"]`, "no-such-account", q),
		chromedp.Click(`#save-policy`, q),
		chromedp.WaitVisible(`#step-1 .field-error`, q),
		chromedp.Text(`#step-1 .field-error`, &problem, q),
	)
	if !strings.Contains(problem, "no-such-account") {
		t.Errorf("the second step's problem reads %q, want its unknown account", problem)
	}
	if _, err := alert.Of(c.store).PolicyByName(ctx, "夜间"); err == nil {
		t.Fatal("a refused policy was saved")
	}
	var shown []string
	if err := chromedp.Run(bctx,
		chromedp.SetValue(`input[name="step.1.via"]`, "sandbox-night", q),
		chromedp.Click(`#save-policy`, q),
		chromedp.WaitVisible(`tr[data-policy="夜间"]`, q),
		chromedp.Navigate(c.url+"/escalation-policies/夜间/edit"),
		chromedp.WaitVisible(`#step-1`, q),
		chromedp.Evaluate(`[...document.querySelectorAll('#policy-steps .chip')].map(e => e.textContent.replace('×', '').trim())`, &shown),
	); err != nil {
		t.Fatal(err)
	}
	p, err := alert.Of(c.store).PolicyByName(ctx, "夜间")
	if err != nil {
		t.Fatal(err)
	}
	want := []alert.PolicyStep{{Targets: []string{"rotation:夜班"}, Wait: "10m"}, {Targets: []string{"E3002"}, Wait: "5m", Via: "sandbox-night"}}
	if diff := cmp.Diff(want, p.Steps); diff != "" {
		t.Errorf("steps saved (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"轮值 夜班", "王芳（E3002）"}, shown); diff != "" {
		t.Errorf("the editor shows the steps' targets (-want +got):\n%s", diff)
	}
	if v := reported(); len(v) > 0 {
		t.Errorf("Content-Security-Policy violations:\n%s", strings.Join(v, "\n"))
	}
}

// runEach runs the actions one after another, each within half a minute, and on the
// first that fails stops the test naming it by its place and showing the page's main
// part as the browser has it then.
func runEach(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	var flat []chromedp.Action
	var walk func([]chromedp.Action)
	walk = func(as []chromedp.Action) {
		for _, a := range as {
			if ts, ok := a.(chromedp.Tasks); ok {
				walk(ts)
			} else {
				flat = append(flat, a)
			}
		}
	}
	walk(actions)
	actions = flat
	for i, a := range actions {
		step, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := chromedp.Run(step, a)
		cancel()
		if err == nil {
			continue
		}
		var page string
		look, cancel := context.WithTimeout(ctx, 5*time.Second)
		_ = chromedp.Run(look, chromedp.Evaluate(`[...document.querySelectorAll('fieldset, [id$="-turns"] > div, [id$="-found"]')].map(e => e.outerHTML).join('\n') + '\n' + [...document.querySelectorAll('input[type=search], input[id$="-q"]')].map(e => e.id + '=' + JSON.stringify(e.value) + (e['htmx-internal-data'] ? ' (htmx)' : '')).join(' ')`, &page))
		cancel()
		if len(page) > 12000 {
			page = page[:12000] + "…"
		}
		t.Fatalf("%s, action %d of %d (%T): %v\nthe page:\n%s", what, i+1, len(actions), a, err, page)
	}
}

// externalIDsOf writes a rotation's turns (people by id) as their external ids.
func externalIDsOf(t *testing.T, c *console, turns [][]int64) [][]string {
	t.Helper()
	out := make([][]string, len(turns))
	for i, turn := range turns {
		people, err := c.store.Directory().RecipientsByIDs(t.Context(), turn)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[int64]string{}
		for _, p := range people {
			byID[p.ID] = p.ExternalID
		}
		for _, id := range turn {
			out[i] = append(out[i], byID[id])
		}
	}
	return out
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
