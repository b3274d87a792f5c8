package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"herald/access"
	"herald/i18n"
	"herald/internal/testenv"
)

// phoneWidth and phoneHeight are an ordinary phone's screen in CSS pixels.
const (
	phoneWidth  = 390
	phoneHeight = 844
	// minTouch is the least height of anything a finger presses at phone width.
	minTouch = 40
)

// phoneTargets are what a finger presses: the header's links and controls, buttons,
// form fields and the pager. Links inside text and table cells are not on the list.
const phoneTargets = `#nav a, .topbar .who a, .topbar .who button, .topbar select, .menu-toggle,
	main button, main .button, main select, main textarea, .pager a,
	main input:not([type=hidden]):not([type=checkbox]):not([type=radio]),
	.login button, .login input:not([type=hidden]):not([type=checkbox])`

// phoneScript measures the page at phone width: how wide the document is, the widest
// element reaching past the right edge of the screen without a scrolling frame of its
// own around it (as a selector), and the touch targets shorter than minTouch.
const phoneScript = `(() => {
	const vw = window.innerWidth;
	const selector = e => {
		const parts = [];
		for (let a = e; a && a.nodeType === 1 && a !== document.documentElement; a = a.parentElement) {
			let s = a.tagName.toLowerCase();
			if (a.id) { parts.unshift(s + '#' + CSS.escape(a.id)); break; }
			if (typeof a.className === 'string' && a.className.trim()) s += '.' + a.className.trim().split(/\s+/).map(c => CSS.escape(c)).join('.');
			const same = a.parentElement ? [...a.parentElement.children].filter(b => b.tagName === a.tagName) : [];
			if (same.length > 1) s += ':nth-of-type(' + (same.indexOf(a) + 1) + ')';
			parts.unshift(s);
		}
		return parts.join(' > ');
	};
	// An element inside a frame that scrolls or clips sideways cannot widen the page.
	// The body and the root do not count: hiding their overflow only hides the problem.
	const framed = e => {
		for (let a = e.parentElement; a && a !== document.body && a !== document.documentElement; a = a.parentElement) {
			if (getComputedStyle(a).overflowX !== 'visible') return true;
		}
		return false;
	};
	let widest = null;
	for (const e of document.body.querySelectorAll('*')) {
		const r = e.getBoundingClientRect();
		if (r.width === 0 || r.right <= vw + 0.5 || framed(e)) continue;
		if (!widest || r.width > widest.width) widest = {selector: selector(e), right: Math.round(r.right), width: Math.round(r.width)};
	}
	// Nothing's box reaches past the edge, yet the page is wider: some content runs out of
	// its box (a long word, a pseudo-element). Name the innermost element it runs out of.
	if (!widest && document.documentElement.scrollWidth > vw) {
		const over = [...document.body.querySelectorAll('*')].filter(e =>
			e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().left + e.scrollWidth > vw + 0.5 && !framed(e));
		for (const e of over.filter(e => !over.some(o => o !== e && e.contains(o)))) {
			const r = e.getBoundingClientRect(), right = r.left + e.scrollWidth;
			if (!widest || right > widest.right) widest = {selector: selector(e) + ' (its content)', right: Math.round(right), width: e.scrollWidth};
		}
	}
	const small = [];
	for (const e of document.querySelectorAll(TARGETS)) {
		const r = e.getBoundingClientRect();
		if (r.width === 0 || r.height === 0 || getComputedStyle(e).visibility === 'hidden' || e.closest('.sr-only')) continue;
		if (r.height < MIN_TOUCH - 0.5) small.push(selector(e) + ' (' + r.height.toFixed(1) + ' px)');
	}
	const nav = document.getElementById('nav');
	const navOpen = !!nav && nav.getBoundingClientRect().height > 0;
	const navLinks = nav ? [...nav.querySelectorAll('a')].map(a => ({href: a.getAttribute('href'), height: a.getBoundingClientRect().height})) : [];
	return {lang: document.documentElement.lang, path: location.pathname,
		scrollWidth: document.documentElement.scrollWidth, innerWidth: vw,
		widest: widest, small: small, navOpen: navOpen, navLinks: navLinks};
})()`

type phoneWidest struct {
	Selector string `json:"selector"`
	Right    int    `json:"right"`
	Width    int    `json:"width"`
}

type phoneNavLink struct {
	Href   string  `json:"href"`
	Height float64 `json:"height"`
}

type phoneMeasure struct {
	Lang        string         `json:"lang"`
	Path        string         `json:"path"`
	ScrollWidth int            `json:"scrollWidth"`
	InnerWidth  int            `json:"innerWidth"`
	Widest      *phoneWidest   `json:"widest"`
	Small       []string       `json:"small"`
	NavOpen     bool           `json:"navOpen"`
	NavLinks    []phoneNavLink `json:"navLinks"`
}

// phone drives one signed-in Chromium at phone size.
type phone struct {
	t    *testing.T
	ctx  context.Context
	base string
	lang string
	// shots is where screenshots go (HERALD_PHONE_SCREENSHOTS), empty for none.
	shots string
	n     int
}

func (p *phone) measure() phoneMeasure {
	p.t.Helper()
	var m phoneMeasure
	script := strings.NewReplacer("TARGETS", strconv.Quote(phoneTargets), "MIN_TOUCH", strconv.Itoa(minTouch)).Replace(phoneScript)
	if err := chromedp.Run(p.ctx, chromedp.Evaluate(script, &m)); err != nil {
		p.t.Fatalf("measure %s: %v", p.lang, err)
	}
	return m
}

// check fails the test when the page is wider than the screen, is not in the test's
// language, or has a touch target shorter than minTouch.
func (p *phone) check(page string) phoneMeasure {
	p.t.Helper()
	m := p.measure()
	if m.InnerWidth != phoneWidth {
		p.t.Fatalf("%s: the window is %d px wide, want %d", page, m.InnerWidth, phoneWidth)
	}
	if m.ScrollWidth > m.InnerWidth || m.Widest != nil {
		where := "nothing reaches past the edge outside a scrolling frame"
		if m.Widest != nil {
			where = fmt.Sprintf("%s (%d px wide, right edge at %d px)", m.Widest.Selector, m.Widest.Width, m.Widest.Right)
		}
		p.t.Errorf("%s (%s) → %s: the page is %d px wide on a %d px screen", page, m.Path, where, m.ScrollWidth, m.InnerWidth)
	}
	if len(m.Small) > 0 {
		p.t.Errorf("%s (%s): touch targets under %d px tall: %s", page, m.Path, minTouch, strings.Join(m.Small, ", "))
	}
	if want := p.lang; m.Lang != want {
		p.t.Errorf("%s (%s) is lang=%q, want %s", page, m.Path, m.Lang, want)
	}
	p.screenshot(page)
	return m
}

// screenshot keeps a picture of the page when HERALD_PHONE_SCREENSHOTS names a folder.
func (p *phone) screenshot(page string) {
	if p.shots == "" {
		return
	}
	var png []byte
	if err := chromedp.Run(p.ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		p.t.Logf("screenshot of %s: %v", page, err)
		return
	}
	p.n++
	name := fmt.Sprintf("%s-%02d-%s.png", p.lang, p.n, strings.Trim(strings.NewReplacer(" ", "-", "/", "-").Replace(page), "-"))
	if err := os.WriteFile(filepath.Join(p.shots, name), png, 0o644); err != nil {
		p.t.Logf("screenshot of %s: %v", page, err)
	}
}

// wait polls a script until it is true.
func (p *phone) wait(what, script string) {
	p.t.Helper()
	if _, err := evalUntil(p.ctx, script, func(ok bool) bool { return ok }); err != nil {
		p.t.Fatalf("%s (%s): %v", what, p.lang, err)
	}
}

// openMenu opens the navigation with the menu button and checks that it shows links a
// finger can press.
func (p *phone) openMenu(page string) phoneMeasure {
	p.t.Helper()
	if err := chromedp.Run(p.ctx, chromedp.Click(`.menu-toggle`, chromedp.ByQuery, chromedp.NodeVisible)); err != nil {
		p.t.Fatalf("%s: press the menu button: %v", page, err)
	}
	p.wait(page+": the menu opens", `document.querySelector('.menu-toggle').getAttribute('aria-expanded') === 'true' &&
		document.getElementById('nav').getBoundingClientRect().height > 0`)
	m := p.check(page + " menu")
	if len(m.NavLinks) == 0 {
		p.t.Fatalf("%s: the menu has no links", page)
	}
	for _, l := range m.NavLinks {
		if l.Height < minTouch-0.5 {
			p.t.Errorf("%s: the menu link %s is %.1f px tall, want at least %d", page, l.Href, l.Height, minTouch)
		}
	}
	return m
}

// open loads a path and checks the page.
func (p *phone) open(page, path string) {
	p.t.Helper()
	if err := chromedp.Run(p.ctx, chromedp.Navigate(p.base+path), chromedp.WaitVisible(`main`, chromedp.ByQuery)); err != nil {
		p.t.Fatalf("open %s (%s): %v", page, path, err)
	}
	p.settle()
	p.check(page)
}

// settle gives htmx's first requests on a page a moment.
func (p *phone) settle() {
	p.wait("page load", `document.readyState === 'complete' && !document.querySelector('.htmx-request')`)
	chromedp.Run(p.ctx, chromedp.Sleep(150*time.Millisecond))
}

// attr reads an attribute of the first element a selector finds, "" when there is none.
func (p *phone) attr(sel, name string) string {
	p.t.Helper()
	var v string
	script := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? (e.getAttribute(%q) || '') : ''; })()`, sel, name)
	if err := chromedp.Run(p.ctx, chromedp.Evaluate(script, &v)); err != nil {
		p.t.Fatal(err)
	}
	return v
}

// TestPhoneConsoleInEnglish and TestPhoneConsoleInChinese use the console at 390 × 844:
// every entry of the navigation, reached through the menu button, and the pages
// without an entry fit the screen, and what a finger presses is at least 40 px tall.
// The two languages are tests of their own, so that they run beside each other and
// beside the package's other tests.
func TestPhoneConsoleInEnglish(t *testing.T) {
	t.Parallel()
	phoneConsole(t, i18n.English, "en-US,en;q=0.9")
}

func TestPhoneConsoleInChinese(t *testing.T) {
	t.Parallel()
	phoneConsole(t, i18n.Chinese, "zh-CN,zh;q=0.9")
}

// phoneConsole checks the console at phone size in one language, asked for with the
// Accept-Language header accept.
func phoneConsole(t *testing.T, tag, accept string) {
	catalog := watchCatalog()
	h := startHerald(t, testEnv(t))
	people, err := h.App.Store.Directory().RecipientsByExternalIDs(context.Background(), []string{"E2001"})
	if err != nil || len(people) != 1 {
		t.Fatalf("demo staff E2001: %v %v", people, err)
	}
	// An API key with a callback that nobody answers, and two events of it waiting: the
	// callback page lists them.
	cb := &access.CallbackSetting{URL: "http://127.0.0.1:1/events", AllowPrivate: true}
	_, secret, err := h.App.Store.Access().CreateCallbackAPIKey(context.Background(), "crm", "send", "admin", access.KeyLimits{}, cb)
	if err != nil {
		t.Fatal(err)
	}
	api := &apiClient{T: t, Base: h.URL, Key: secret}
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	code, sent, _ := api.Call("POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"later"},"send_at":"`+later+`"}`)
	if code != http.StatusAccepted {
		t.Fatalf("send: %d %v", code, sent["_raw"])
	}
	id := sent["messages"].([]any)[0].(map[string]any)["id"].(string)
	if code, body, _ := api.Call("POST", "/api/v1/messages/"+id+"/cancel", ""); code != http.StatusOK {
		t.Fatalf("cancel: %d %v", code, body["_raw"])
	}
	shots := os.Getenv("HERALD_PHONE_SCREENSHOTS")
	if shots != "" {
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// One tab: the sign-in page, the menu and its entries, then the pages reached
	// otherwise.
	ctx := testenv.Chrome(t)
	p := &phone{t: t, ctx: ctx, base: h.URL, lang: tag, shots: shots}
	if err := chromedp.Run(ctx,
		network.SetExtraHTTPHeaders(network.Headers{"Accept-Language": accept}),
		chromedp.EmulateViewport(phoneWidth, phoneHeight),
	); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Run(ctx, chromedp.Navigate(h.URL+"/login"), chromedp.WaitVisible(`#username`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	p.check("sign-in")
	if err := browserLogin(ctx, h.URL, "admin", testAdminPassword); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	p.settle()
	checkPhoneMenu(t, p)

	// Pages without an entry of their own.
	p.open("compose", "/compose")
	if err := chromedp.Run(ctx,
		chromedp.Click(fmt.Sprintf(`input[name="recipient"][value="%d"]`, people[0].ID), chromedp.ByQuery),
		chromedp.SendKeys(`#text`, "Ledger 42 · 对账 due today", chromedp.ByQuery),
		chromedp.Click(`button[hx-post="/compose/preview"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#compose-preview h3`, chromedp.ByQuery),
	); err != nil {
		t.Fatalf("compose preview: %v", err)
	}
	p.settle()
	p.check("compose preview")
	if err := chromedp.Run(ctx,
		chromedp.Click(`#compose button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#batch-progress`, chromedp.ByQuery),
	); err != nil {
		t.Fatalf("compose: %v", err)
	}
	p.wait("the batch is sent", `document.querySelectorAll('#batch-progress [data-status="sent"]').length === 1`)
	p.settle()
	p.check("batch")

	p.open("messages", "/messages")
	msg := p.attr(`main table a[href^="/messages/"]`, "href")
	if msg == "" {
		t.Fatalf("the messages page links no message")
	}
	p.open("message", msg)

	for _, sub := range []struct{ page, path string }{
		{"new person", "/recipients/new"},
		{"import people", "/recipients/import"},
		{"new template", "/templates/new"},
		{"new account", "/accounts/new"},
		{"duty", "/duty"},
		{"import holidays", "/duty/holidays/import"},
		{"new rotation", "/duty/rotations/new"},
		{"duty calendar", "/duty/calendar"},
		{"duty feeds", "/duty/feeds"},
		{"national calendar", "/duty/holidays/national"},
		{"shift swap", "/duty/swaps/new"},
		{"new silence", "/silences/new"},
		{"password", "/password"},
		{"API reference", "/api-reference"},
	} {
		p.open(sub.page, sub.path)
		if sub.path == "/duty/calendar" {
			// One column of days at this width: the month opens at today.
			p.wait("the month view opens at today", `(() => {
		const d = document.querySelector('.month-day.today');
		if (!d) { return false; }
		const r = d.getBoundingClientRect();
		return r.top >= -1 && r.top < window.innerHeight; })()`)
		}
	}
	for _, list := range []struct{ page, path, link string }{
		{"edit person", "/recipients", `main table a[href^="/recipients/"][href$="/edit"]`},
		{"edit template", "/templates", `main table a[href^="/templates/"][href$="/edit"]`},
		{"edit account", "/accounts", `main table a[href^="/accounts/"][href$="/edit"]`},
		{"API key callback", "/api-keys", `main table a[href^="/api-keys/"][href$="/callback"]`},
	} {
		if err := chromedp.Run(ctx, chromedp.Navigate(h.URL+list.path), chromedp.WaitVisible(`main`, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		href := p.attr(list.link, "href")
		if href == "" {
			t.Errorf("%s links nothing to edit (the demo data has one of each)", list.path)
			continue
		}
		p.open(list.page, href)
	}
	if m := i18n.MissingSince(catalog); len(m) > 0 {
		t.Errorf("catalog lookups failed:\n  %s", strings.Join(m, "\n  "))
	}
}

// checkPhoneMenu: the menu button folds the navigation away and brings it back, and
// every entry of an admin's menu opens its page through it.
func checkPhoneMenu(t *testing.T, p *phone) {
	t.Helper()
	ctx := p.ctx
	// The menu button folds the navigation away and brings it back.
	m := p.check("dashboard")
	if m.NavOpen {
		t.Errorf("the navigation is open before the menu button is pressed")
	}
	m = p.openMenu("dashboard")
	var entries []string
	monitoring := false
	for _, l := range m.NavLinks {
		if l.Href == "/monitoring/" {
			monitoring = true // Asynqmon is an application of its own
			continue
		}
		entries = append(entries, l.Href)
	}
	if !monitoring {
		t.Errorf("the menu has no link to the monitoring pages (/monitoring/)")
	}
	if len(entries) < 9 {
		t.Errorf("an admin's menu has %d entries besides monitoring: %v", len(entries), entries)
	}
	if err := chromedp.Run(ctx, chromedp.Click(`.menu-toggle`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	p.wait("the menu closes", `document.querySelector('.menu-toggle').getAttribute('aria-expanded') === 'false' &&
	document.getElementById('nav').getBoundingClientRect().height === 0`)

	// Every entry, through the menu.
	for _, href := range entries {
		p.openMenu("before " + href)
		if err := chromedp.Run(ctx,
			chromedp.Evaluate(`window.phoneLeft = true`, nil),
			chromedp.Click(fmt.Sprintf(`#nav a[href=%q]`, href), chromedp.ByQuery, chromedp.NodeVisible),
		); err != nil {
			t.Fatalf("menu entry %s: %v", href, err)
		}
		p.wait("menu entry "+href, fmt.Sprintf(`!window.phoneLeft && location.pathname === %q && !!document.querySelector('main')`, href))
		p.settle()
		p.check(href)
	}
}
