package web_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"herald/i18n"
	"herald/models"
	"herald/web"
)

// layoutScript measures the rules every console page keeps at any width: the page does
// not scroll sideways, no table header is narrower than its word (it is on one line and
// its text fits its box), and a date in a table takes one or two lines. It also reports
// where the columns named by data-col end, and where the frames of their tables end.
const layoutScript = `(() => {
	const lines = e => {
		const r = document.createRange();
		r.selectNodeContents(e);
		const tops = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
		return tops.size;
	};
	const visible = e => e.getBoundingClientRect().width > 0;
	const squeezed = [], tallDates = [], cols = {};
	for (const th of document.querySelectorAll('main th')) {
		if (!visible(th)) continue;
		if (th.scrollWidth > th.clientWidth + 1 || lines(th) > 1) squeezed.push(th.textContent.trim() + ' (' + th.clientWidth + '/' + th.scrollWidth + ' px, ' + lines(th) + ' lines)');
	}
	for (const t of document.querySelectorAll('main td time')) {
		if (visible(t) && lines(t) > 2) tallDates.push(t.textContent.trim() + ' (' + lines(t) + ' lines)');
	}
	for (const th of document.querySelectorAll('main th[data-col]')) {
		const frame = th.closest('.table-wrap').getBoundingClientRect();
		cols[th.dataset.col] = {right: th.getBoundingClientRect().right, frameRight: frame.right, visible: visible(th)};
	}
	// A label, button, heading, badge, date or short cell never breaks inside a word:
	// each run of text between spaces stays on one line. (A sentence, such as a hint
	// inside a label, wraps as text does.)
	const broken = [];
	for (const e of document.querySelectorAll('header nav a, header .nav-group-toggle, main button, main .button, main label, main th, main td, main h2, main .badge, main time, main .stat .l')) {
		if (!visible(e) || e.textContent.trim().length > 16) continue;
		const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			for (const m of n.data.matchAll(/\S{2,}/g)) {
				const r = document.createRange();
				r.setStart(n, m.index);
				r.setEnd(n, m.index + m[0].length);
				const tops = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
				if (tops.size > 1) broken.push(m[0] + ' (' + e.tagName.toLowerCase() + ')');
			}
		}
	}
	const entries = [...document.querySelectorAll('header nav a, header .nav-group-toggle')].filter(visible);
	const navRows = new Set(entries.map(x => Math.round(x.getBoundingClientRect().top))).size;
	return {lang: document.documentElement.lang, width: innerWidth,
		scrollWidth: document.scrollingElement.scrollWidth, squeezed: squeezed, tallDates: tallDates, cols: cols,
		broken: broken, navRows: navRows, headerHeight: document.querySelector('header.topbar').getBoundingClientRect().height};
})()`

type layoutColumn struct {
	Right      float64 `json:"right"`
	FrameRight float64 `json:"frameRight"`
	Visible    bool    `json:"visible"`
}

type layoutMeasure struct {
	Lang        string                  `json:"lang"`
	Width       int                     `json:"width"`
	ScrollWidth int                     `json:"scrollWidth"`
	Squeezed    []string                `json:"squeezed"`
	TallDates   []string                `json:"tallDates"`
	Cols        map[string]layoutColumn `json:"cols"`
	Broken      []string                `json:"broken"`
	NavRows     int                     `json:"navRows"`
	Header      float64                 `json:"headerHeight"`
}

// TestBrowserConsoleLayout opens the dashboard, the message list, a batch, the compose
// form, a CSV import preview, the integrations' pages (the list, one with its events,
// the form, a token with its snippets) and the heartbeats' (the list, the form, a token
// with its snippets) in Chinese at 1366, 768 and 390 px, and checks the layout rules on
// each (checkLayouts). TestBrowserAlertingLayout does the same for the pages of alerts,
// beside it in a browser of its own.
func TestBrowserConsoleLayout(t *testing.T) {
	t.Parallel()
	c := newConsole(t, func(o *web.Options) { o.DefaultLanguage = i18n.Chinese })
	c.user(adminUser)
	c.integrationWithEvents("layout")
	c.heartbeatMissed("layout", "layout-policy")
	later := time.Now().Add(2 * time.Hour)
	msgs := c.send(nil, "E2001", "E2002", "E2003")
	c.stop(msgs["E2001"].ID)
	c.finish(msgs["E2002"].ID, models.Outcome{Status: models.StatusSent, CountsAttempt: true, Called: true, ProviderMessageID: "p-1"})
	c.send(&later, "E2001", "E2003")
	batch := "/batches/" + msgs["E2001"].BatchID
	_, sched, _ := c.apiKey("layout-admin", "admin").call("POST", "/api/v1/report-schedules",
		`{"report":"interruptions","period":"weekly","send":{"recipients":["E2001","E2002"],"departments":["IT"],"to_on_duty":true}}`)
	schedule, ok := sched["id"].(float64)
	if !ok {
		t.Fatalf("a report schedule: %v", sched["_raw"])
	}

	ctx := c.chineseBrowser(t, adminUser)
	q := chromedp.ByQuery
	shots := os.Getenv("HERALD_LAYOUT_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	importPreview := []chromedp.Action{chromedp.Navigate(c.url + "/recipients/import"), chromedp.WaitVisible(`#csv`, q),
		chromedp.Evaluate(`document.querySelector('#csv').value = document.querySelector('#csv').placeholder`, nil),
		chromedp.Submit(`#csv`, q), chromedp.WaitVisible(`.preview-table`, q)}
	// Each width makes an integration of its own to see its token page.
	made := 0
	tokenPage := []chromedp.Action{chromedp.Navigate(c.url + "/integrations/new"), chromedp.WaitVisible(`#integration-form`, q),
		chromedp.ActionFunc(func(ctx context.Context) error {
			made++
			return chromedp.SendKeys(`#name`, fmt.Sprintf("layout-%d", made), q).Do(ctx)
		}),
		chromedp.SetValue(`#format`, "zabbix", q), chromedp.Submit(`#name`, q), chromedp.WaitVisible(`#integration-token`, q)}
	heartbeatToken := []chromedp.Action{chromedp.Navigate(c.url + "/heartbeats/new"), chromedp.WaitVisible(`#heartbeat-form`, q),
		chromedp.ActionFunc(func(ctx context.Context) error {
			made++
			return chromedp.SendKeys(`#name`, fmt.Sprintf("layout-%d", made), q).Do(ctx)
		}),
		chromedp.SetValue(`select[name="route.policy"]`, "layout-policy", q), chromedp.SetValue(`select[name="route.platform"]`, "sandbox", q),
		chromedp.Submit(`#name`, q), chromedp.WaitVisible(`#heartbeat-token`, q)}
	openDetails := chromedp.Evaluate(`document.querySelectorAll('main details').forEach(d => d.open = true); true`, nil)
	pages := []layoutPage{
		{"dashboard", []chromedp.Action{chromedp.Navigate(c.url + "/"), chromedp.WaitVisible(`#waiting`, q)}, []string{"accepted"}, nil},
		{"messages", []chromedp.Action{chromedp.Navigate(c.url + "/messages"), chromedp.WaitVisible(`#message-list table`, q)}, []string{"status"}, nil},
		{"batch", []chromedp.Action{chromedp.Navigate(c.url + batch), chromedp.WaitVisible(`#batch-actions`, q)}, nil, nil},
		{"compose", []chromedp.Action{chromedp.Navigate(c.url + "/compose"), chromedp.WaitVisible(`#compose-list`, q)}, nil, nil},
		{"import", importPreview, nil, []string{"result"}},
		{"integrations", []chromedp.Action{chromedp.Navigate(c.url + "/integrations"), chromedp.WaitVisible(`#integrations`, q)}, nil, nil},
		{"integration", []chromedp.Action{chromedp.Navigate(c.url + "/integrations/layout"), chromedp.WaitVisible(`#events`, q), openDetails}, nil, nil},
		{"integration form", []chromedp.Action{chromedp.Navigate(c.url + "/integrations/layout/edit"), chromedp.WaitVisible(`#integration-form`, q), openDetails}, nil, nil},
		{"integration token", tokenPage, nil, nil},
		{"heartbeats", []chromedp.Action{chromedp.Navigate(c.url + "/heartbeats"), chromedp.WaitVisible(`#heartbeats`, q)}, nil, nil},
		{"heartbeat form", []chromedp.Action{chromedp.Navigate(c.url + "/heartbeats/layout/edit"), chromedp.WaitVisible(`#heartbeat-form`, q)}, nil, nil},
		{"heartbeat token", append(heartbeatToken, openDetails), nil, nil},
		{"reports", []chromedp.Action{chromedp.Navigate(c.url + "/reports?group_by=person"), chromedp.WaitVisible(`#chart-duty`, q)}, nil, nil},
		{"report schedules", []chromedp.Action{chromedp.Navigate(c.url + "/reports/schedules"), chromedp.WaitVisible(`#report-schedules`, q)}, nil, nil},
		{"report schedule edit", []chromedp.Action{chromedp.Navigate(fmt.Sprintf("%s/reports/schedules/%d/edit", c.url, int64(schedule))),
			chromedp.WaitVisible(`#schedule-editing`, q)}, nil, nil},
	}
	checkLayouts(t, ctx, pages, shots)
	t.Run("a group of the navigation opens on a click below a wide screen", func(t *testing.T) {
		var hidden, shown bool
		var title string
		accounts := `header nav a[href="/accounts"]`
		if err := chromedp.Run(ctx, chromedp.EmulateViewport(1024, 800), chromedp.Navigate(c.url+"/"), chromedp.WaitVisible(`#waiting`, q),
			chromedp.Evaluate(`document.querySelector('`+accounts+`').getBoundingClientRect().width === 0`, &hidden),
			chromedp.Click(`//header//button[contains(@class,"nav-group-toggle")][following-sibling::div/a[@href="/accounts"]]`, chromedp.BySearch),
			chromedp.WaitVisible(accounts, q),
			chromedp.Evaluate(`document.querySelector('`+accounts+`').closest('.nav-group').querySelector('.nav-group-toggle').getAttribute('aria-expanded') === 'true'`, &shown),
			chromedp.Click(accounts, q), chromedp.WaitVisible(`main h1`, q), chromedp.Title(&title),
		); err != nil {
			t.Fatal(err)
		}
		if !hidden || !shown || !strings.Contains(title, "发送账号") {
			t.Errorf("folded before the click: %v, open after it: %v, then the page %q", hidden, shown, title)
		}
	})
	t.Run("message list holds its reload while text of it is selected", func(t *testing.T) {
		checkListPause(t, ctx, c.url)
	})
}

// layoutPage is a page TestBrowserConsoleLayout and TestBrowserAlertingLayout check: how
// to reach it, and the columns that must be on a phone's screen at 390 px (phoneCols)
// or inside their table's frame at every width (wideCols).
type layoutPage struct {
	name                string
	actions             []chromedp.Action
	phoneCols, wideCols []string
}

// checkLayouts opens each page at 1366, 768 and 390 px and checks the layout rules on it
// (layoutScript), the columns that must be visible, and Send after the people on a phone.
// Each page's screenshot must be as wide as asked; HERALD_LAYOUT_SCREENSHOTS names a
// directory to keep them in.
func checkLayouts(t *testing.T, ctx context.Context, pages []layoutPage, shots string) {
	t.Helper()
	for _, width := range []int{1366, 768, 390} {
		if err := chromedp.Run(ctx, chromedp.EmulateViewport(int64(width), 900)); err != nil {
			t.Fatal(err)
		}
		for _, pg := range pages {
			where := fmt.Sprintf("%s at %d px", pg.name, width)
			var m layoutMeasure
			if err := chromedp.Run(ctx, append(pg.actions, chromedp.Evaluate(layoutScript, &m))...); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if m.Lang != i18n.Chinese || m.Width != width {
				t.Fatalf("%s: the page is in %q, %d px wide", where, m.Lang, m.Width)
			}
			if m.ScrollWidth > m.Width {
				t.Errorf("%s: the page scrolls sideways (%d px wide)", where, m.ScrollWidth)
			}
			if len(m.Squeezed) > 0 {
				t.Errorf("%s: table headers narrower than their words: %s", where, strings.Join(m.Squeezed, "; "))
			}
			if len(m.Broken) > 0 {
				t.Errorf("%s: words broken across lines: %s", where, strings.Join(m.Broken, "; "))
			}
			// The navigation is one row from a tablet's width up (groups fold into menus
			// below a wide screen's), and at 1366 px the whole header is.
			if width > 760 && m.NavRows != 1 {
				t.Errorf("%s: the navigation takes %d rows", where, m.NavRows)
			}
			if width >= 1366 && m.Header > 64 {
				t.Errorf("%s: the header is %.0f px tall, more than one row", where, m.Header)
			}
			if len(m.TallDates) > 0 {
				t.Errorf("%s: dates on more than two lines: %s", where, strings.Join(m.TallDates, "; "))
			}
			check := pg.wideCols
			if width == 390 {
				check = append(check, pg.phoneCols...)
			}
			for _, col := range check {
				got, ok := m.Cols[col]
				limit := min(got.FrameRight, float64(width))
				if !ok || !got.Visible || got.Right > limit+0.5 {
					t.Errorf("%s: column %s ends at %.0f px, past the edge at %.0f px (%+v)", where, col, got.Right, limit, got)
				}
			}
			if pg.name == "compose" {
				checkSendPlace(t, ctx, where, width)
			}
			var png []byte
			if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
				t.Fatalf("%s: screenshot: %v", where, err)
			}
			img, _, err := image.DecodeConfig(bytes.NewReader(png))
			if err != nil || img.Width != width {
				t.Errorf("%s: screenshot %d px wide (%v), want %d", where, img.Width, err, width)
			}
			if err := os.WriteFile(filepath.Join(shots, fmt.Sprintf("%s-%d.png", pg.name, width)), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestBrowserAlertingLayout checks the layout of the pages of alerts (the incidents,
// an alert's page, the escalation policy and rotation editors, the inhibition rule form) as
// TestBrowserConsoleLayout does the others, then takes the incident on its page.
func TestBrowserAlertingLayout(t *testing.T) {
	t.Parallel()
	c := newConsole(t, func(o *web.Options) { o.DefaultLanguage = i18n.Chinese })
	c.user(adminUser)
	// The two-step alert moves the clock on past its steps: the incident comes after it,
	// so that its own escalation is still open to be taken.
	alertPage := fmt.Sprintf("/alerts/%d", c.twoStepAlert().ID)
	c.stormIncident("layout-storm", 12)
	ctx := c.chineseBrowser(t, adminUser)
	q := chromedp.ByQuery
	shots := os.Getenv("HERALD_LAYOUT_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	openDetails := chromedp.Evaluate(`document.querySelectorAll('main details').forEach(d => d.open = true); true`, nil)
	checkLayouts(t, ctx, []layoutPage{
		{"incidents", []chromedp.Action{chromedp.Navigate(c.url + "/incidents"), chromedp.WaitVisible(`details.incident`, q), openDetails}, nil, nil},
		{"alert", []chromedp.Action{chromedp.Navigate(c.url + alertPage), chromedp.WaitVisible(`#alert-timeline`, q)}, nil, nil},
		{"policy editor", []chromedp.Action{chromedp.Navigate(c.url + "/escalation-policies/new"), chromedp.WaitVisible(`#policy-steps`, q)}, nil, nil},
		{"inhibition rule form", []chromedp.Action{chromedp.Navigate(c.url + "/inhibit-rules/new"), chromedp.WaitVisible(`#inhibit-rule-form`, q)}, nil, nil},
		{"rotation editor", []chromedp.Action{chromedp.Navigate(c.url + "/duty/rotations/new"), chromedp.WaitVisible(`#rotation-turns`, q)}, nil, nil},
	}, shots)
	t.Run("taking an incident on the 事件 page takes its alerts", func(t *testing.T) {
		checkIncidentTaken(t, ctx, c)
	})
}

// checkSendPlace checks that Send is under the list of people at phone width, where the
// form is one column, and beside it (above its end) when the people have a column.
func checkSendPlace(t *testing.T, ctx context.Context, where string, width int) {
	t.Helper()
	var place struct {
		SendTop    float64 `json:"sendTop"`
		PeopleEnd  float64 `json:"peopleEnd"`
		PeopleLeft float64 `json:"peopleLeft"`
		SendLeft   float64 `json:"sendLeft"`
	}
	script := `(() => { const s = document.querySelector('#compose button[type=submit]').getBoundingClientRect(),
		p = document.querySelector('.compose-people').getBoundingClientRect();
		return {sendTop: s.top, peopleEnd: p.bottom, peopleLeft: p.left, sendLeft: s.left}; })()`
	if err := chromedp.Run(ctx, chromedp.Evaluate(script, &place)); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	oneColumn := width <= 800
	if after := place.SendTop >= place.PeopleEnd; after != oneColumn {
		t.Errorf("%s: Send at %.0f px, the people end at %.0f px: want Send after the people %v", where, place.SendTop, place.PeopleEnd, oneColumn)
	}
}

// checkListPause marks the message list, selects text in it and asks it to reload: the
// reload is held back while the selection lasts, and happens once it is cleared.
func checkListPause(t *testing.T, ctx context.Context, base string) {
	reload := `htmx.ajax('GET', document.querySelector('#message-list').getAttribute('hx-get'),
		{source: '#message-list', target: '#message-list', swap: 'outerHTML'}); true`
	marked := `!!document.querySelector('#message-list[data-marked]')`
	var still bool
	err := chromedp.Run(ctx, chromedp.EmulateViewport(1366, 900),
		chromedp.Navigate(base+"/messages"), chromedp.WaitVisible(`#message-list table`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('#message-list').setAttribute('data-marked', '');
			window.getSelection().selectAllChildren(document.querySelector('#message-list td')); true`, nil),
		chromedp.Evaluate(reload, nil), chromedp.Sleep(700*time.Millisecond),
		chromedp.Evaluate(marked, &still))
	if err != nil {
		t.Fatal(err)
	}
	if !still {
		t.Fatal("the list reloaded while text of it was selected")
	}
	err = chromedp.Run(ctx, chromedp.Evaluate(`window.getSelection().removeAllRanges(); true`, nil),
		chromedp.Evaluate(reload, nil), chromedp.Sleep(700*time.Millisecond), chromedp.Evaluate(marked, &still))
	if err != nil {
		t.Fatal(err)
	}
	if still {
		t.Error("the list did not reload once the selection was cleared")
	}
}
