package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"herald/i18n"
	"herald/internal/testenv"
)

// evalUntil polls a script until ok accepts its result.
func evalUntil[T any](ctx context.Context, script string, ok func(T) bool) (T, error) {
	var v T
	for {
		err := chromedp.Run(ctx, chromedp.Evaluate(script, &v))
		if err == nil && ok(v) {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return v, fmt.Errorf("waiting for %s: last %v (%v): %w", script, v, err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// overflowScript measures a page's width and names the outermost elements that reach
// past the viewport, for a failure that says where to look.
const overflowScript = `(() => {
	const w = document.documentElement.clientWidth;
	const clipped = e => { for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
		if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(a).overflowX)) return true; } return false; };
	const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
		(typeof e.className === 'string' && e.className.trim() ? '.' + e.className.trim().split(/\s+/).join('.') : '');
	const path = e => { const parts = []; for (let a = e; a && a !== document.body && parts.length < 4; a = a.parentElement) parts.unshift(name(a)); return parts.join(' > '); };
	const wide = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > w + 1 && !clipped(e));
	const outer = wide.filter(e => !wide.includes(e.parentElement)).slice(0, 8).map(e =>
		path(e) + ' (right ' + Math.round(e.getBoundingClientRect().right) + 'px)');
	return {scrollWidth: document.documentElement.scrollWidth, outer: outer};
})()`

type overflow struct {
	ScrollWidth int      `json:"scrollWidth"`
	Outer       []string `json:"outer"`
}

// checkPhoneWidth opens each path at 390 px and reports a body wider than the screen.
func checkPhoneWidth(t *testing.T, ctx context.Context, base, lang string, paths map[string]string) {
	t.Helper()
	if err := chromedp.Run(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	for name, path := range paths {
		var o overflow
		if err := chromedp.Run(ctx,
			chromedp.Navigate(base+path),
			chromedp.WaitVisible(`main`, chromedp.ByQuery),
			chromedp.Sleep(300*time.Millisecond), // htmx settles the first poll
			chromedp.Evaluate(overflowScript, &o),
		); err != nil {
			t.Errorf("%s (%s) at 390 px: %v", name, lang, err)
			continue
		}
		if o.ScrollWidth > 390+1 {
			t.Errorf("%s (%s) at 390 px is %d px wide: it scrolls sideways; widest elements: %s",
				name, lang, o.ScrollWidth, strings.Join(o.Outer, ", "))
		}
	}
	if err := chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
}

// screenshot writes a full-page picture of the current page to docs/ when
// HERALD_UPDATE_SCREENSHOTS=1 (so a test run never rewrites the README's pictures).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("HERALD_UPDATE_SCREENSHOTS") != "1" {
		return
	}
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(repoRoot, "docs", name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(png))
}

// TestChineseBrowserComposesToZhangWei drives the console in Chromium with a Chinese
// browser: the pages are in Chinese though the console's default is English, a message in
// Chinese composed to 张伟 reaches the platform intact, and the batch page names its
// statuses in Chinese. The language switch then turns the console English. Both fit a
// 390 px phone screen.
func TestChineseBrowserComposesToZhangWei(t *testing.T) {
	t.Parallel()
	catalog := watchCatalog()
	env := testEnv(t) // HERALD_DEFAULT_LANGUAGE=en: Chinese comes from the browser alone
	h := startHerald(t, env)
	api := newAPIKey(t, h, "admin")
	if status, body, _ := api.Call("PUT", "/api/v1/recipients", `[
		{"external_id":"E3001","name":"张伟","org_type":"branch","branch":"浦东支行","department":"运营部","active":true},
		{"external_id":"E3002","name":"李娜","org_type":"branch","branch":"徐汇支行","department":"柜面","active":true},
		{"external_id":"E3003","name":"王磊","org_type":"branch","branch":"浦东支行","department":"信贷部","active":true}]`); status != 200 {
		t.Fatalf("create staff: %d %s", status, body["_raw"])
	}
	people, err := h.App.Store.Directory().RecipientsByExternalIDs(context.Background(), []string{"E3001", "E3002", "E3003"})
	if err != nil || len(people) != 3 {
		t.Fatalf("new staff: %v %v", people, err)
	}

	ctx := testenv.Chrome(t)
	const acceptChinese = "zh-CN,zh;q=0.9"
	if err := chromedp.Run(ctx, network.SetExtraHTTPHeaders(network.Headers{"Accept-Language": acceptChinese})); err != nil {
		t.Fatal(err)
	}
	if err := browserLogin(ctx, h.URL, "admin", testAdminPassword); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	var lang string
	if err := chromedp.Run(ctx, chromedp.Evaluate(`document.documentElement.lang`, &lang)); err != nil || lang != i18n.Chinese {
		t.Errorf("after signing in with Accept-Language %s the page is lang=%q (%v), want zh-CN", acceptChinese, lang, err)
	}

	actions := []chromedp.Action{
		chromedp.Navigate(h.URL + "/compose"),
		chromedp.WaitVisible(`#text`, chromedp.ByQuery),
	}
	for _, p := range people {
		actions = append(actions, chromedp.Click(fmt.Sprintf(`input[name="recipient"][value="%d"]`, p.ID), chromedp.ByQuery))
	}
	var typed string
	actions = append(actions,
		chromedp.SendKeys(`#text`, zhText, chromedp.ByQuery),
		chromedp.Value(`#text`, &typed, chromedp.ByQuery),
	)
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("compose: %v", err)
	}
	if typed != zhText {
		t.Fatalf("the text box holds %q after typing %q", typed, zhText)
	}
	if err := chromedp.Run(ctx,
		chromedp.Submit(`#text`, chromedp.ByQuery),
		chromedp.WaitVisible(`#batch-progress`, chromedp.ByQuery),
	); err != nil {
		t.Fatalf("submit: %v", err)
	}
	var batchURL string
	if err := chromedp.Run(ctx, chromedp.Location(&batchURL)); err != nil {
		t.Fatal(err)
	}
	if _, err := evalUntil(ctx, `document.querySelectorAll('#batch-progress [data-status="sent"]').length`, func(n int) bool { return n == 3 }); err != nil {
		t.Fatalf("the batch page never showed three sent messages: %v", err)
	}
	var text string
	if err := chromedp.Run(ctx,
		chromedp.Evaluate(`document.documentElement.lang`, &lang),
		chromedp.Evaluate(`document.body.innerText`, &text),
	); err != nil {
		t.Fatal(err)
	}
	if lang != i18n.Chinese {
		t.Errorf("batch page is lang=%q, want zh-CN", lang)
	}
	if sent := i18n.In(i18n.Chinese, "status.sent"); !strings.Contains(text, sent) || !strings.Contains(text, "张伟") {
		t.Errorf("batch page does not show 张伟 and the status %s:\n%s", sent, text)
	}
	// The platform received the Chinese text as typed.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := ""
		for _, d := range h.App.Sim.Deliveries() {
			if d.To == "E3001" {
				got = d.Content
			}
		}
		if got == zhText {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the simulator received %q for 张伟 (E3001), want %q", got, zhText)
		}
		time.Sleep(100 * time.Millisecond)
	}

	if err := chromedp.Run(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(batchURL),
		chromedp.WaitVisible(`#batch-progress`, chromedp.ByQuery), chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "console-zh-CN.png")
	batchPath := strings.TrimPrefix(batchURL, h.URL)
	checkPhoneWidth(t, ctx, h.URL, "zh-CN", map[string]string{"dashboard": "/", "batch page": batchPath})

	// The language switch in the header: English, whatever the browser asks for.
	if err := chromedp.Run(ctx,
		chromedp.Navigate(batchURL),
		chromedp.WaitVisible(`select[name="language"]`, chromedp.ByQuery),
		chromedp.Evaluate(`(() => { const s = document.querySelector('select[name="language"]'); s.value = 'en'; s.dispatchEvent(new Event('change', {bubbles: true})); })()`, nil),
	); err != nil {
		t.Fatalf("switch language: %v", err)
	}
	if _, err := evalUntil(ctx, `document.documentElement.lang`, func(l string) bool { return l == i18n.English }); err != nil {
		t.Fatalf("the language switch did not turn the page English: %v", err)
	}
	if err := chromedp.Run(ctx, chromedp.WaitVisible(`#batch-progress`, chromedp.ByQuery),
		chromedp.Location(&batchURL), chromedp.Evaluate(`document.body.innerText`, &text)); err != nil {
		t.Fatal(err)
	}
	if strings.TrimPrefix(batchURL, h.URL) != batchPath {
		t.Errorf("the language switch came back to %s, want %s", batchURL, batchPath)
	}
	if sent := i18n.In(i18n.English, "status.sent"); !strings.Contains(text, sent) {
		t.Errorf("English batch page does not show the status %q:\n%s", sent, text)
	}
	screenshot(t, ctx, "console-en.png")
	checkPhoneWidth(t, ctx, h.URL, "en", map[string]string{"dashboard": "/", "batch page": batchPath})

	if m := i18n.MissingSince(catalog); len(m) > 0 {
		t.Errorf("catalog lookups failed:\n  %s", strings.Join(m, "\n  "))
	}
}
