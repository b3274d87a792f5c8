package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"herald/internal/testenv"
	"herald/kernel"
	"herald/silence"
)

// The silences page and its form in Chromium at a phone's, a tablet's and a desktop's
// width: nothing scrolls sideways; the form's preview counts what the silence would
// have held, and saving lists it, active.
func TestSilencePagesInTheBrowser(t *testing.T) {
	t.Parallel()
	h := startHerald(t, testEnv(t))
	api := newAPIKey(t, h, "send")
	if status, body, _ := api.Call("POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2001","E2002","E2003"],"content":{"text":"disk full"}}`); status != 202 {
		t.Fatalf("send: %d %s", status, body["_raw"])
	}
	ctx := testenv.Chrome(t)
	if err := browserLogin(ctx, h.URL, "admin", testAdminPassword); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	fill := []chromedp.Action{
		chromedp.Navigate(h.URL + "/silences/new"),
		chromedp.WaitVisible(`#silence-form`, chromedp.ByQuery),
		chromedp.SetValue(`#name_0`, "department", chromedp.ByQuery),
		chromedp.SendKeys(`#value_0`, "Counter", chromedp.ByQuery),
		chromedp.SendKeys(`#comment`, "核心系统升级 CHG-42", chromedp.ByQuery),
		chromedp.Click(`button[hx-post="/silences/preview"]`, chromedp.ByQuery),
	}
	if err := chromedp.Run(ctx, fill...); err != nil {
		t.Fatal(err)
	}
	if text, err := waitText(ctx, `#silence-preview`, func(s string) bool { return strings.Contains(s, "would have held") }); err != nil ||
		!strings.Contains(text, "would have held 2 messages") {
		t.Errorf("preview: %q (%v), want 2 messages (E2001 and E2002 are in Counter)", text, err)
	}
	for _, width := range []int64{390, 768, 1366} {
		if err := chromedp.Run(ctx, chromedp.EmulateViewport(width, 900)); err != nil {
			t.Fatal(err)
		}
		var o overflow
		if err := chromedp.Run(ctx, chromedp.Evaluate(overflowScript, &o)); err != nil {
			t.Fatal(err)
		}
		if o.ScrollWidth > int(width)+1 {
			t.Errorf("the silence form at %d px is %d px wide: %s", width, o.ScrollWidth, strings.Join(o.Outer, ", "))
		}
	}
	if err := chromedp.Run(ctx,
		chromedp.Click(`#silence-form button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#silence-states`, chromedp.ByQuery),
	); err != nil {
		t.Fatalf("save: %v", err)
	}
	list, err := silence.Of(h.App.Store).Silences(context.Background(), 0, time.Time{}, 10)
	if err != nil || len(list) != 1 || list[0].State(kernel.Now()) != "active" || list[0].Comment != "核心系统升级 CHG-42" {
		t.Fatalf("saved silences: %+v (%v)", list, err)
	}
	for _, width := range []int64{390, 768, 1366} {
		var o overflow
		var rows int
		if err := chromedp.Run(ctx,
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(h.URL+"/silences"),
			chromedp.WaitVisible(`main`, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelectorAll('tr[data-silence]').length`, &rows),
			chromedp.Evaluate(overflowScript, &o),
		); err != nil {
			t.Fatal(err)
		}
		if rows != 1 || o.ScrollWidth > int(width)+1 {
			t.Errorf("the silences page at %d px: %d rows, %d px wide: %s", width, rows, o.ScrollWidth, strings.Join(o.Outer, ", "))
		}
	}
}
