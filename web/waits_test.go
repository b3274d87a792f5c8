package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"herald/models"
	"herald/silence"
)

// holdByCounterSilence saves, through the console's form, a silence of the Counter
// department's messages (E2001 and E2002 in the demo staff), and plays the worker that
// meets message id under it: the message is held. It returns the silence's id.
func (c *console) holdByCounterSilence(id string) int64 {
	c.t.Helper()
	ctx := context.Background()
	at := func(d time.Duration) string { return time.Now().In(c.loc).Add(d).Format("2006-01-02T15:04") }
	resp, body := c.as(operatorUser).post("/silences", url.Values{"starts_at": {at(-time.Minute)}, "ends_at": {at(2 * time.Hour)},
		"comment": {"核心系统升级"}, "on_end": {"release"}, "name_0": {"department"}, "value_0": {"Counter"}})
	wantRedirect(c.t, "save a silence", resp, body, "/silences")
	live, err := silence.Of(c.store).LiveSilences(ctx)
	if err != nil || len(live) != 1 {
		c.t.Fatalf("live silences %v, %v", live, err)
	}
	held, _, err := silence.Of(c.store).HoldMessages(ctx, map[string][]int64{id: {live[0].ID}}, nil, time.Now().Add(time.Second))
	if err != nil || len(held) != 1 {
		c.t.Fatalf("hold %s: %v, %v", id, held, err)
	}
	return live[0].ID
}

// The dashboard counts the messages a silence holds and those waiting to be folded into
// a digest beside the other waits, each a link to the list of them; a digest notice
// no longer counts as awaiting approval.
func TestDashboardCountsHeldAndDigestWaits(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	held := c.send(nil, "E2001")["E2001"]
	c.holdByCounterSilence(held.ID)

	sandbox, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	resp, body := c.as(operatorUser).post("/compose", url.Values{"account": {fmt.Sprint(sandbox.ID)}, "content.subject": {"日终批量失败"},
		"content.text": {"详情见系统"}, "priority": {"normal"}, "recipient": {fmt.Sprint(c.recipient("E2003").ID)},
		"digest.key": {"eod"}, "digest.window": {"5m"}, "digest.max": {"5"}})
	batch := strings.TrimPrefix(wantRedirect(t, "send with a digest", resp, body, "/batches/"), "/batches/")
	notices, err := c.store.MessagesOfBatch(ctx, batch, 10)
	if err != nil || len(notices) != 1 {
		t.Fatalf("digest notices %v, %v", notices, err)
	}

	viewer := c.as(viewerUser)
	_, body = viewer.get("/")
	want := map[string]int{"scheduled": 0, "throttled": 0, "quiet_hours": 0, "approval": 0, "held": 1, "digest": 1}
	if diff := cmp.Diff(want, waitingCounts(body)); diff != "" {
		t.Errorf("dashboard waiting counts (-want +got):\n%s", diff)
	}
	for link, ids := range map[string][]string{"/messages?waiting=held": {held.ID}, "/messages?waiting=digest": {notices[0].ID}, "/messages?waiting=approval": nil} {
		if link != "/messages?waiting=approval" {
			wantContains(t, "dashboard link", body, `href="`+link+`"`)
		}
		resp, page := viewer.get(link)
		wantStatus(t, link, resp, page, http.StatusOK)
		if diff := cmp.Diff(ids, messageIDs(page)); diff != "" {
			t.Errorf("%s lists (-want +got):\n%s", link, diff)
		}
	}
	_, page := viewer.get("/messages")
	wantContains(t, "waiting filter", page, `<option value="held">`, `<option value="digest">`)
}

// 今日已停止 counts what is still stopped today: a stopped message re-sent since is no
// longer counted, one stopped yesterday and re-sent today takes nothing off today.
func TestStoppedTodayCountsWhatIsStillStopped(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	msgs := c.send(nil, "E2001", "E2002", "E2003")
	for _, m := range msgs {
		c.stop(m.ID)
		c.h.Stats.Count(m.AccountID, "stopped", 1) // as the worker that stopped it does
	}
	if err := c.h.Stats.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := func() string {
		_, body := c.as(viewerUser).get("/")
		return statValue(body, "stat-stopped")
	}
	if got := stopped(); got != "3" {
		t.Fatalf("stopped today reads %q before any re-send, want 3", got)
	}
	resp, body := c.as(operatorUser).post("/messages/"+msgs["E2001"].ID+"/retry", nil)
	if resp.StatusCode >= http.StatusBadRequest {
		t.Fatalf("re-send: %d %s", resp.StatusCode, body)
	}
	resp, body = c.as(operatorUser).post("/messages/resend", url.Values{"status": {"stopped"}, "name": {c.recipient("E2002").Name}})
	if resp.StatusCode >= http.StatusBadRequest {
		t.Fatalf("bulk re-send: %d %s", resp.StatusCode, body)
	}
	if err := c.h.Stats.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := stopped(); got != "1" {
		t.Errorf("stopped today reads %q after two were re-sent, want 1", got)
	}
	if st := []models.Status{c.status(msgs["E2001"].ID), c.status(msgs["E2002"].ID), c.status(msgs["E2003"].ID)}; !slices.Equal(st,
		[]models.Status{models.StatusPending, models.StatusPending, models.StatusStopped}) {
		t.Errorf("statuses after the re-sends: %v", st)
	}
}

// statValue is the number a dashboard stat with the element id shows.
func statValue(body, id string) string {
	_, after, ok := strings.Cut(body, `id="`+id+`">`)
	if !ok {
		return ""
	}
	n, _, _ := strings.Cut(after, "<")
	return n
}

// A silence holds a message: the dashboard's 暂缓 tile counts it and leads to the list
// of held messages, which shows it, at phone, tablet and desktop widths.
func TestBrowserHeldTileLeadsToTheHeldMessages(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	held := c.send(nil, "E2001")["E2001"]
	c.send(nil, "E2003")
	c.holdByCounterSilence(held.ID)
	ctx := c.chineseBrowser(t, viewerUser)
	q := chromedp.ByQuery
	tile := `#waiting a[data-waiting="held"]`
	for _, width := range []int64{390, 768, 1366} {
		var n, label string
		var rows []string
		err := chromedp.Run(ctx,
			chromedp.EmulateViewport(width, 900),
			chromedp.Navigate(c.url+"/"),
			chromedp.WaitVisible(tile, q),
			chromedp.Text(tile+" .n", &n, q),
			chromedp.Text(tile+" .l", &label, q),
			chromedp.Click(tile, q),
		)
		if err == nil {
			err = waitTrue(ctx, "the held list", `location.search.includes("waiting=held") && document.querySelector("#waiting").value === "held"`)
		}
		if err == nil {
			err = chromedp.Run(ctx, chromedp.Evaluate(`[...document.querySelectorAll('tr[data-message]')].map(tr => tr.dataset.message)`, &rows))
		}
		if err != nil {
			t.Fatalf("%d px: %v", width, err)
		}
		if n != "1" || label != "暂缓" {
			t.Errorf("%d px: the tile reads %q %q, want 1 暂缓", width, n, label)
		}
		if !slices.Equal(rows, []string{held.ID}) {
			t.Errorf("%d px: the held list shows %v, want %s", width, rows, held.ID)
		}
	}
}

// The compose preview names a silence that will hold some of the messages and a digest
// they fold into, and says the send goes now only when nothing holds it.
func TestComposePreviewNamesSilenceAndDigestWaits(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	sandbox, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) string { return time.Now().In(c.loc).Add(d).Format("2006-01-02T15:04") }
	op := c.as(operatorUser)
	resp, body := op.post("/silences", url.Values{"starts_at": {at(-time.Minute)}, "ends_at": {at(2 * time.Hour)},
		"comment": {"核心系统升级"}, "on_end": {"release"}, "name_0": {"department"}, "value_0": {"Counter"}})
	wantRedirect(t, "save a silence", resp, body, "/silences")
	form := func(people ...string) url.Values {
		v := url.Values{"account": {fmt.Sprint(sandbox.ID)}, "content.text": {"Ledger 42"}, "priority": {"normal"}}
		for _, p := range people {
			v.Add("recipient", fmt.Sprint(c.recipient(p).ID))
		}
		return v
	}
	digest := form("E2003")
	digest.Set("digest.key", "eod")
	digest.Set("digest.window", "5m")
	digest.Set("digest.max", "5")
	silenced, digested, now := `id="preview-wait-silence"`, `id="preview-wait-digest"`, "on Sandbox, now."
	for _, tc := range []struct {
		name     string
		form     url.Values
		want     []string
		unwanted []string
	}{
		// E2001 is in the Counter department, E2003 is not; both are branch staff, who
		// receive whoever is on duty.
		{"one silenced of two", form("E2001", "E2003"), []string{silenced, "1 of these messages will be held by a silence", "核心系统升级",
			"once the waits below allow"}, []string{digested, now}},
		{"nobody silenced", form("E2003"), []string{now}, []string{silenced, digested}},
		{"folded into a digest", digest, []string{digested, "1 of these messages will be folded into the digest eod"}, []string{silenced, now}},
	} {
		resp, body := op.postHX("/compose/preview", tc.form)
		wantStatus(t, tc.name, resp, body, http.StatusOK)
		wantContains(t, tc.name, body, tc.want...)
		wantNotContains(t, tc.name, body, tc.unwanted...)
	}
}
