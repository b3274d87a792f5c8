package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestHolidayNoticeAfterRedirect: a holiday action redirects to the duty page at
// #holidays, and its notice is shown there, above the list the browser scrolls to, not
// at the top of the page out of sight.
func TestHolidayNoticeAfterRedirect(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	op := c.as(operatorUser)
	date := c.today(3)
	want := "/duty?year=" + date[:4] + "#holidays"

	// noticeAt returns where the page shows the notice: "holidays" or "top".
	noticeAt := func(page, notice string) string {
		t.Helper()
		n, h := strings.Index(page, notice), strings.Index(page, `<section id="holidays">`)
		switch {
		case n < 0 || h < 0:
			t.Fatalf("the page lacks the notice %q or the holidays:\n%s", notice, page)
		case n > h:
			return "holidays"
		}
		return "top"
	}

	_, page := op.get("/duty")
	wantContains(t, "duty page", page, `action="/duty/holidays#holidays"`)

	resp, body := op.post("/duty/holidays", url.Values{"date": {date}, "kind": {"off"}, "name": {"Founders Day"}})
	if loc := wantRedirect(t, "save holiday", resp, body, "/duty"); loc != want {
		t.Errorf("save redirects to %q, want %q", loc, want)
	}
	resp, page = op.get(strings.TrimSuffix(want, "#holidays"))
	wantStatus(t, "the page after saving", resp, page, http.StatusOK)
	if at := noticeAt(page, "Saved the holiday entry of "+date+"."); at != "holidays" {
		t.Errorf("the saved notice is at the %s of the page, want above the holiday list", at)
	}
	_, page = op.get(strings.TrimSuffix(want, "#holidays"))
	wantNotContains(t, "the page shown again", page, "Saved the holiday entry")

	resp, body = op.post("/duty/holidays/delete", url.Values{"date": {date}})
	if loc := wantRedirect(t, "delete holiday", resp, body, "/duty"); loc != want {
		t.Errorf("delete redirects to %q, want %q", loc, want)
	}
	_, page = op.get(strings.TrimSuffix(want, "#holidays"))
	if at := noticeAt(page, "Deleted the holiday entry of "+date+"."); at != "holidays" {
		t.Errorf("the deleted notice is at the %s of the page, want above the holiday list", at)
	}

	// Other duty actions come back to the top of the page, and their notice is there.
	resp, body = op.post("/duty/overrides", url.Values{"date": {c.today(1)}, "recipient": {"E1003"}, "action": {"add"}})
	wantRedirect(t, "override", resp, body, "/duty")
	_, page = op.get(resp.Header.Get("Location"))
	if at := noticeAt(page, "Saved the override of"); at != "top" {
		t.Errorf("the override notice is at the %s, want the top of the page", at)
	}
}
