package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"herald/directory"
)

// After several kinds of action (a sign-in, a user made, a weekday's roster changed, an
// account's connection tested, an alert opened and escalated by Herald itself and taken
// through its link, a silence made), the
// audit page in Chinese shows no Latin word outside codes, ids and names, and no time
// in UTC, at phone, tablet and desktop widths.
func TestBrowserAuditPageIsChineseThroughout(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	admin := c.login(adminUser)
	resp, body := admin.post("/users", url.Values{"username": {"zhangli"}, "password": {"a-long-initial-password"}, "role": {"operator"}})
	wantRedirect(t, "create a user", resp, body, "/users")
	resp, body = admin.post("/duty/slots", url.Values{"weekday": {"5"}, "recipient": {"E1002"}})
	if resp.StatusCode >= http.StatusBadRequest {
		t.Fatalf("add a duty slot: %d %s", resp.StatusCode, body)
	}
	resp, body = admin.post("/accounts/sandbox/test", nil)
	wantStatus(t, "test the sandbox account", resp, body, http.StatusOK)
	_, msgs := c.ackAlert("E2001")
	resp, body = c.as("").post(c.ackPath(msgs["E2001"]), url.Values{"action": {"ack"}})
	if resp.StatusCode >= http.StatusBadRequest {
		t.Fatalf("acknowledge by the link: %d %s", resp.StatusCode, body)
	}
	c.holdByCounterSilence(c.send(nil, "E2002")["E2002"].ID)

	// Names are the staff's (and their departments' and branches'), the users', the demo's account and template, the test's
	// policy and the fixture's own system actor.
	names := []string{adminUser, operatorUser, "zhangli", "sandbox", "task-overdue", "ack-test", "test"}
	staff, err := c.store.Directory().ListRecipients(t.Context(), directory.RecipientFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range staff {
		names = append(names, p.Name, p.Department, p.Branch)
	}
	// A word is a run of letters, digits and underscores; one with a digit is an id or
	// a number, as a batch's UUID is whole.
	latin := regexp.MustCompile(`[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*`)
	uuid := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	utc := regexp.MustCompile(`\d{2}:\d{2}(:\d{2})?Z|T\d{2}:\d{2}`)

	ctx := c.chineseBrowser(t, adminUser)
	q := chromedp.ByQuery
	for _, width := range []int64{390, 768, 1366} {
		var rows []string
		var scrollWidth int64
		if err := chromedp.Run(ctx,
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(c.url+"/audit"),
			chromedp.WaitVisible(`tr[data-audit="account.test"]`, q),
			chromedp.WaitVisible(`tr[data-audit="alert.acknowledge"]`, q),
			chromedp.WaitVisible(`tr[data-audit="silence.create"]`, q),
			// Codes (the action's code, the address) and what was given as it was (ids,
			// free text) are left out: the rest is the page's own words.
			chromedp.Evaluate(`[...document.querySelectorAll('tbody tr')].map(tr => {
				const r = tr.cloneNode(true);
				r.querySelectorAll('.mono, .verbatim').forEach(e => e.remove());
				return r.textContent.replace(/\s+/g, ' ');
			})`, &rows),
			chromedp.Evaluate(`document.documentElement.scrollWidth`, &scrollWidth),
		); err != nil {
			t.Fatalf("%d px: %v", width, err)
		}
		if len(rows) < 6 {
			t.Errorf("%d px: %d audit rows, want the actions above", width, len(rows))
		}
		if scrollWidth > width {
			t.Errorf("%d px: the page is %d px wide", width, scrollWidth)
		}
		for _, row := range rows {
			text := uuid.ReplaceAllString(row, " ")
			for _, n := range names {
				if n != "" {
					text = strings.ReplaceAll(text, n, " ")
				}
			}
			for _, w := range latin.FindAllString(text, -1) {
				if !strings.ContainsAny(w, "0123456789") && w != "API" {
					t.Errorf("%d px: %q is not Chinese in %q", width, w, row)
					break
				}
			}
			if utc.MatchString(row) {
				t.Errorf("%d px: a time in UTC in %q", width, row)
			}
		}
	}
}

// chineseBrowser is Chromium reading the console in Chinese, signed in as username.
func (c *console) chineseBrowser(t *testing.T, username string) context.Context {
	t.Helper()
	c.user(username)
	return c.chineseBrowserWith(t, 1366, username, testPassword, `header.topbar`)
}
