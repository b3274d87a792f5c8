package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/models"
	"herald/sending"
)

// waitingStat reads the dashboard's waiting counts: reason (and account) → count.
var waitingStat = regexp.MustCompile(`data-waiting="(\w+)" data-account="([^"]*)"[^>]*>\s*<div class="n">(\d+)</div>`)

func waitingCounts(body string) map[string]int {
	out := map[string]int{}
	for _, m := range waitingStat.FindAllStringSubmatch(body, -1) {
		key := m[1]
		if m[2] != "" {
			key += ":" + m[2]
		}
		n, _ := strconv.Atoi(m[3])
		out[key] = n
	}
	return out
}

// The dashboard says what waits and why, each count a link to the messages it counts;
// the message list filters by the same rule.
func TestDashboardShowsWhatWaitsAndWhy(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(viewerUser)
	ctx := context.Background()
	later := time.Now().Add(3 * time.Hour)
	scheduled := c.send(&later, "E2001")["E2001"]
	throttled := c.send(nil, "E2002")["E2002"]
	quiet := c.send(nil, "E2003")["E2003"]
	sent := c.send(nil, "E2001")["E2001"]
	c.finish(throttled.ID, models.Outcome{Status: models.StatusPending, ErrorClass: "throttled", Error: "per minute", NextAttemptAt: &later})
	c.finish(quiet.ID, models.Outcome{Status: models.StatusPending, ErrorClass: sending.ErrorClassQuietHours, Error: "quiet", NextAttemptAt: &later})
	c.finish(sent.ID, models.Outcome{Status: models.StatusSent, CountsAttempt: true, Called: true})
	if err := c.store.Intake().SetApprovalThreshold(ctx, 1, "test"); err != nil {
		t.Fatal(err)
	}
	c.h.Dispatch.ForgetThreshold()
	held := c.send(nil, "E2002", "E2003")

	viewer := c.as(viewerUser)
	_, body := viewer.get("/")
	want := map[string]int{"scheduled": 1, "throttled:sandbox": 1, "quiet_hours": 1, "approval": 2, "held": 0, "digest": 0}
	if diff := cmp.Diff(want, waitingCounts(body)); diff != "" {
		t.Errorf("dashboard waiting counts (-want +got):\n%s", diff)
	}
	_, live := viewer.getHX("/dashboard/live")
	if diff := cmp.Diff(want, waitingCounts(live)); diff != "" {
		t.Errorf("live dashboard waiting counts (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		link string
		want []string
	}{
		{"/messages?waiting=scheduled", []string{scheduled.ID}},
		{"/messages?account=sandbox&waiting=throttled", []string{throttled.ID}},
		{"/messages?waiting=quiet_hours", []string{quiet.ID}},
		{"/messages?waiting=approval", []string{held["E2002"].ID, held["E2003"].ID}},
		{"/messages?waiting=nonsense", []string{scheduled.ID, throttled.ID, quiet.ID, sent.ID, held["E2002"].ID, held["E2003"].ID}},
	} {
		if u, _ := url.Parse(tc.link); u.Query().Get("waiting") != "nonsense" {
			wantContains(t, "dashboard link", body, `href="`+strings.ReplaceAll(tc.link, "&", "&amp;")+`"`)
		}
		resp, page := viewer.get(tc.link)
		wantStatus(t, tc.link, resp, page, http.StatusOK)
		got := messageIDs(page)
		slices.Sort(got)
		slices.Sort(tc.want)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s lists (-want +got):\n%s", tc.link, diff)
		}
	}
	// The filter keeps its choice, and the list reloads itself with it.
	_, page := viewer.get("/messages?waiting=approval")
	wantContains(t, "filtered list", page, `<option value="approval" selected>`, `hx-get="/messages/live?waiting=approval"`, `data-pause-on-select`)
	resp, part := viewer.getHX("/messages/live?waiting=approval")
	wantStatus(t, "live list", resp, part, http.StatusOK)
	wantNotContains(t, "live list", part, "<html", `id="status"`)
	if got := len(messageIDs(part)); got != 2 {
		t.Errorf("live list has %d rows, want 2", got)
	}
}

// The compose preview says, before sending, when the batch will wait for approval or
// for the account's quiet hours, and until when.
func TestComposePreviewSaysWhatTheSendWillWaitFor(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(operatorUser)
	ctx := context.Background()
	acct, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().In(c.loc)
	start, end := now.Add(-time.Hour), now.Add(2*time.Hour)
	acct.QuietHours = sending.QuietHours{Start: start.Format("15:04"), End: end.Format("15:04")}
	if err := c.store.Sending().SaveAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	c.accounts.Forget()
	if err := c.store.Intake().SetApprovalThreshold(ctx, 1, "test"); err != nil {
		t.Fatal(err)
	}
	c.h.Dispatch.ForgetThreshold()

	op := c.as(operatorUser)
	form := func(priority string, people ...string) url.Values {
		v := url.Values{"account": {fmt.Sprint(acct.ID)}, "content.text": {"Ledger 42"}, "priority": {priority}}
		for _, p := range people {
			v.Add("recipient", fmt.Sprint(c.recipient(p).ID))
		}
		return v
	}
	approval := `id="preview-wait-approval"`
	quiet := `id="preview-wait-quiet"`
	for _, tc := range []struct {
		name     string
		form     url.Values
		want     []string
		unwanted []string
	}{
		{"one person, normal", form("normal", "E2001"), []string{quiet, "normal and low priority messages wait until"}, []string{approval}},
		{"two people, normal", form("normal", "E2001", "E2002"),
			[]string{approval, "This send reaches 2 people, more than the approval threshold (1)", quiet}, nil},
		{"one person, high", form("high", "E2001"), nil, []string{approval, quiet}},
	} {
		resp, body := op.postHX("/compose/preview", tc.form)
		wantStatus(t, tc.name, resp, body, http.StatusOK)
		wantContains(t, tc.name, body, tc.want...)
		wantNotContains(t, tc.name, body, tc.unwanted...)
	}
	// The time it names is when the quiet hours end, to the minute.
	_, body := op.postHX("/compose/preview", form("normal", "E2001"))
	wantContains(t, "quiet until", body, end.Format("15:04")+":00")
}
