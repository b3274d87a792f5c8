package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"herald/directory"
	"herald/dispatch"
	"herald/models"
)

// send submits a console message to the people through the sandbox account and returns
// its messages by recipient external id.
func (c *console) send(sendAt *time.Time, people ...string) map[string]models.Message {
	c.t.Helper()
	ctx := context.Background()
	acct, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		c.t.Fatal(err)
	}
	res, err := c.h.Dispatch.Submit(ctx, dispatch.Request{Source: "console", Actor: "test", AccountID: acct.ID,
		Recipients: people, Text: "Ledger 42 is overdue", SendAt: sendAt})
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]models.Message{}
	for _, m := range res.Messages {
		out[res.Names[m.RecipientID]] = m
	}
	return out
}

// finish plays a worker: it claims a message and records an attempt's outcome.
func (c *console) finish(id string, o models.Outcome) {
	c.t.Helper()
	ctx := context.Background()
	m, err := c.store.ClaimForSending(ctx, id, time.Now().Add(time.Minute))
	if err != nil {
		c.t.Fatalf("claim %s: %v", id, err)
	}
	if o.StartedAt.IsZero() {
		o.StartedAt = time.Now()
	}
	if err := c.store.FinishAttempt(ctx, m, o); err != nil {
		c.t.Fatalf("finish %s: %v", id, err)
	}
}

// stop ends a message as a permanent failure.
func (c *console) stop(id string) {
	c.finish(id, models.Outcome{Status: models.StatusStopped, ErrorClass: "permanent", Error: "recipient rejected",
		ProviderCode: "40001", CountsAttempt: true, Called: true, Duration: 12 * time.Millisecond})
}

func (c *console) status(id string) models.Status {
	c.t.Helper()
	m, err := c.store.MessageByID(context.Background(), id)
	if err != nil {
		c.t.Fatal(err)
	}
	return m.Status
}

var messageRow = regexp.MustCompile(`<tr data-message="([^"]+)"`)

func messageIDs(body string) []string {
	var out []string
	for _, m := range messageRow.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestMessagesPage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	later := time.Now().Add(2 * time.Hour)
	msgs := c.send(nil, "E2001", "E2002", "E2003")
	scheduled := c.send(&later, "E2001")["E2001"]
	stopped, sent, throttled := msgs["E2001"], msgs["E2002"], msgs["E2003"]
	c.stop(stopped.ID)
	c.finish(sent.ID, models.Outcome{Status: models.StatusSent, CountsAttempt: true, Called: true, ProviderMessageID: "p-1"})
	until := time.Now().Add(90 * time.Second).UTC().Truncate(time.Microsecond)
	c.finish(throttled.ID, models.Outcome{Status: models.StatusPending, ErrorClass: "throttled", Error: "per_second limit", NextAttemptAt: &until})
	viewer := c.as(viewerUser)

	t.Run("list shows states as operators read them", func(t *testing.T) {
		resp, body := viewer.get("/messages")
		wantStatus(t, "GET /messages", resp, body, http.StatusOK)
		if ids := messageIDs(body); len(ids) != 4 || ids[0] != scheduled.ID {
			t.Fatalf("rows %v, want 4, newest (%s) first", ids, scheduled.ID)
		}
		wantContains(t, "message list", body, `data-status="pending">Scheduled<`, `data-status="stopped">Stopped<`,
			`data-status="sent">Sent<`, "Throttled until "+until.In(c.loc).Format("15:04:05"), "Liu Yang", "recipient rejected")
		wantNotContains(t, "viewer's message list", body, "Re-send stopped")
	})

	t.Run("filters", func(t *testing.T) {
		today := c.today(0)
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"status=stopped", []string{stopped.ID}},
			{"status=sent", []string{sent.ID}},
			{"recipient=E2002", []string{sent.ID}},
			{"error_class=throttled", []string{throttled.ID}},
			{"error_class=permanent&status=stopped", []string{stopped.ID}},
			{"platform=sandbox&recipient=E2001", []string{scheduled.ID, stopped.ID}},
			{"platform=wecom", nil},
			{"account=sandbox&status=pending", []string{scheduled.ID, throttled.ID}},
			{"batch=" + stopped.BatchID + "&status=sent", []string{sent.ID}},
			{"from=" + today + "&to=" + today + "&recipient=E2003", []string{throttled.ID}},
			{"from=" + c.today(1), nil},
			{"to=" + c.today(-1), nil},
		} {
			resp, body := viewer.get("/messages?" + tc.query)
			wantStatus(t, tc.query, resp, body, http.StatusOK)
			if got := messageIDs(body); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("%s: rows %v, want %v", tc.query, got, tc.want)
			}
			if tc.want == nil {
				wantContains(t, tc.query, body, "No messages match these filters")
			}
		}
		resp, body := viewer.get("/messages?recipient=NOPE&from=yesterday")
		wantStatus(t, "unknown recipient", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "recipient", `no recipient has external_id &#34;NOPE&#34;`)
		wantFieldError(t, body, "from", "must be a date as YYYY-MM-DD")
		wantContains(t, "form keeps input", body, `value="NOPE"`)
	})

	t.Run("detail shows every attempt", func(t *testing.T) {
		resp, body := viewer.get("/messages/" + stopped.ID)
		wantStatus(t, "message page", resp, body, http.StatusOK)
		wantContains(t, "message page", body, "Ledger 42 is overdue", "recipient rejected", "40001", "12 ms", "Liu Yang")
		wantNotContains(t, "viewer's message page", body, "/retry", "/cancel")
		_, body = c.as(operatorUser).get("/messages/" + stopped.ID)
		wantContains(t, "operator's page of a stopped message", body, "/messages/"+stopped.ID+"/retry")
		wantNotContains(t, "operator's page of a stopped message", body, "/cancel")
		resp, body = viewer.get("/messages/0190aaaa-0000-7000-8000-000000000000")
		wantStatus(t, "unknown message", resp, body, http.StatusNotFound)
	})

	t.Run("retry and cancel", func(t *testing.T) {
		op := c.as(operatorUser)
		resp, body := op.post("/messages/"+stopped.ID+"/retry", nil)
		wantRedirect(t, "retry", resp, body, "/messages/"+stopped.ID)
		if s := c.status(stopped.ID); s != models.StatusPending {
			t.Errorf("after retry: %s", s)
		}
		if a := c.lastAudit("message.retry"); a.TargetID != stopped.ID || a.Actor != operatorUser {
			t.Errorf("audit %+v", a)
		}
		resp, body = op.post("/messages/"+stopped.ID+"/retry", nil)
		wantStatus(t, "retry a pending message", resp, body, http.StatusConflict)
		wantContains(t, "message page", body, "The message is pending now; only stopped messages can be retried.")

		resp, body = op.post("/messages/"+scheduled.ID+"/cancel", nil)
		wantRedirect(t, "cancel", resp, body, "/messages/"+scheduled.ID)
		if s := c.status(scheduled.ID); s != models.StatusCancelled {
			t.Errorf("after cancel: %s", s)
		}
		resp, body = op.post("/messages/"+sent.ID+"/cancel", nil)
		wantStatus(t, "cancel a sent message", resp, body, http.StatusConflict)

		resp, body = viewer.post("/messages/"+throttled.ID+"/cancel", nil)
		wantStatus(t, "viewer cancels", resp, body, http.StatusForbidden)
	})
}

// TestMessagePageWarnsOfUnknownOutcome: a message whose worker died during a call shows
// that attempt as unknown and warns that the platform may have received it twice.
func TestMessagePageWarnsOfUnknownOutcome(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	m := c.send(nil, "E2001")["E2001"]
	if _, err := c.store.ClaimForSending(ctx, m.ID, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if released, err := c.store.ReleaseExpiredLeases(ctx); err != nil || len(released) != 1 {
		t.Fatalf("release the dead worker's claim: %v %v", released, err)
	}
	c.finish(m.ID, models.Outcome{Status: models.StatusSent, CountsAttempt: true, Called: true})
	resp, body := c.as(viewerUser).get("/messages/" + m.ID)
	wantStatus(t, "message page", resp, body, http.StatusOK)
	wantContains(t, "message page after a dead worker", body, `data-unknown-attempts="1"`,
		"Outcome unknown for attempt 1", `<span class="badge unknown">Unknown</span>`)

	other := c.send(nil, "E2002")["E2002"]
	c.finish(other.ID, models.Outcome{Status: models.StatusSent, CountsAttempt: true, Called: true})
	_, body = c.as(viewerUser).get("/messages/" + other.ID)
	wantNotContains(t, "message page of a plain delivery", body, "data-unknown-attempts")
}

func TestMessagesKeysetPagination(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	var people []directory.Recipient
	var ids []string
	for i := range 120 {
		id := fmt.Sprintf("K%03d", i)
		people = append(people, directory.Recipient{ExternalID: id, Name: "Keyset " + id, OrgType: directory.Branch, Active: true})
		ids = append(ids, id)
	}
	if _, err := c.store.Directory().UpsertRecipients(context.Background(), people); err != nil {
		t.Fatal(err)
	}
	// Two batches: rows of one batch may share created_at, so ties must page correctly.
	c.send(nil, ids[:70]...)
	c.send(nil, ids[70:]...)
	viewer := c.as(viewerUser)
	seen := map[string]bool{}
	path, pages := "/messages", 0
	for path != "" {
		pages++
		resp, body := viewer.get(path)
		wantStatus(t, path, resp, body, http.StatusOK)
		for _, id := range messageIDs(body) {
			if seen[id] {
				t.Fatalf("page %d repeats message %s", pages, id)
			}
			seen[id] = true
		}
		next := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(body)
		path = ""
		if next != nil {
			path = strings.ReplaceAll(next[1], "&amp;", "&")
		}
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
	}
	if len(seen) != 120 || pages != 3 {
		t.Errorf("saw %d messages on %d pages, want 120 on 3", len(seen), pages)
	}
}

func TestBulkResend(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	msgs := c.send(nil, "E2001", "E2002", "E2003")
	for _, m := range msgs {
		c.stop(m.ID)
	}
	other := c.send(nil, "E2001")["E2001"]
	op := c.as(operatorUser)

	resp, body := op.get("/messages/resend?status=stopped")
	wantStatus(t, "confirmation", resp, body, http.StatusOK)
	wantContains(t, "confirmation", body, "Re-send 3 stopped messages?", "every stopped message")

	resp, body = op.get("/messages/resend?recipient=E2002")
	wantContains(t, "confirmation", body, "Re-send 1 stopped message?", "recipient E2002", `name="recipient" value="E2002"`)

	resp, body = op.get("/messages/resend?status=sent")
	wantContains(t, "confirmation", body, "nothing to re-send")
	wantNotContains(t, "confirmation", body, "Re-send 0")

	resp, body = op.post("/messages/resend", url.Values{"recipient": {"E2002"}})
	wantRedirect(t, "re-send one", resp, body, "/messages?")
	if s := c.status(msgs["E2002"].ID); s != models.StatusPending {
		t.Errorf("E2002's message after re-send: %s", s)
	}
	if s := c.status(msgs["E2001"].ID); s != models.StatusStopped {
		t.Errorf("E2001's message was outside the filter but is %s", s)
	}

	resp, body = op.post("/messages/resend", url.Values{"status": {"stopped"}})
	loc := wantRedirect(t, "re-send the rest", resp, body, "/messages?")
	for _, p := range []string{"E2001", "E2003"} {
		if s := c.status(msgs[p].ID); s != models.StatusPending {
			t.Errorf("%s's message after re-send: %s", p, s)
		}
	}
	if s := c.status(other.ID); s != models.StatusPending {
		t.Errorf("a pending message was touched: %s", s)
	}
	_, body = op.get(loc)
	wantContains(t, "list after re-send", body, "Re-sent 2 stopped messages.")
	if a := c.lastAudit("messages.resend"); a.ParamMap()["resent"] != "2" {
		t.Errorf("audit %+v", a)
	}

	resp, body = c.as(viewerUser).post("/messages/resend", url.Values{"status": {"stopped"}})
	wantStatus(t, "viewer re-sends", resp, body, http.StatusForbidden)
}

// A message due later reads as scheduled on its batch's page until it is due, as on the
// messages page; one due now reads as pending.
func TestBatchPageShowsScheduledMessages(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	later := time.Now().Add(2 * time.Hour)
	scheduled := c.send(&later, "E2001")["E2001"]
	due := c.send(nil, "E2002")["E2002"]
	op := c.as(operatorUser)
	for _, tc := range []struct {
		m    models.Message
		want string
	}{{scheduled, "Scheduled"}, {due, "Pending"}} {
		resp, body := op.getIn("en", "/batches/"+tc.m.BatchID)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("batch page: %d", resp.StatusCode)
		}
		row := body[strings.Index(body, `data-message="`+tc.m.ID+`"`):]
		row = row[:strings.Index(row, "</tr>")]
		if !strings.Contains(row, ">"+tc.want+"<") {
			t.Errorf("the row of a %s message reads %s, want %q", tc.m.Status, row, tc.want)
		}
	}
}

// The dashboard's recent failures read as sentences, the stored text on hover, and name
// each message by the end of its id, where ids of one moment differ.
func TestDashboardFailuresReadAsSentences(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	m := c.send(nil, "E2001")["E2001"]
	next := time.Now().Add(time.Minute)
	c.finish(m.ID, models.Outcome{Status: models.StatusFailed, ErrorClass: "transient", Error: "dial tcp 10.0.0.9:443: i/o timeout",
		CountsAttempt: true, Called: true, NextAttemptAt: &next})
	_, body := c.as(operatorUser).getIn("en", "/dashboard/live")
	i := strings.Index(body, "data-failure-error")
	if i < 0 {
		t.Fatalf("no recent failure on the dashboard:\n%s", body)
	}
	row := body[i:]
	row = row[:strings.Index(row, "</tr>")]
	wantContains(t, "failure row", row, "A temporary failure", `title="dial tcp 10.0.0.9:443: i/o timeout"`, "…"+m.ID[len(m.ID)-8:])
}

// The throughput chart says there is nothing yet rather than draw an empty frame, and
// draws itself once messages go out.
func TestDashboardChartSaysWhenEmpty(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	viewer := c.as(viewerUser)
	_, body := viewer.getIn("zh-CN", "/dashboard/live")
	wantContains(t, "empty dashboard", body, `id="chart-empty"`, "这一小时内还没有")
	wantNotContains(t, "empty dashboard", body, "<polyline")
	m := c.send(nil, "E2001")["E2001"]
	c.finish(m.ID, models.Outcome{Status: models.StatusSent, CountsAttempt: true, Called: true, ProviderMessageID: "p-1"})
	c.h.Stats.Count(m.AccountID, "sent", 1) // as the worker counts it
	if err := c.h.Stats.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, body = viewer.getIn("zh-CN", "/dashboard/live")
	wantContains(t, "dashboard after a send", body, "<polyline")
	wantNotContains(t, "dashboard after a send", body, `id="chart-empty"`)
}

// The batch page's actions are part of its live progress: re-send appears in the
// progress partial once a message stops, without a reload, and never for a viewer.
func TestBatchActionsFollowProgress(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	msgs := c.send(nil, "E2001", "E2002")
	batch := "/batches/" + msgs["E2001"].BatchID + "/progress"
	op := c.as(operatorUser)
	_, body := op.getHX(batch)
	wantContains(t, "progress while pending", body, `id="cancel-batch"`)
	wantNotContains(t, "progress while pending", body, `id="resend-batch"`)
	c.finish(msgs["E2001"].ID, models.Outcome{Status: models.StatusStopped, ErrorClass: "permanent", Error: "no such user", CountsAttempt: true, Called: true})
	_, body = op.getHX(batch)
	wantContains(t, "progress after a stop", body, `id="resend-batch"`, `id="cancel-batch"`)
	_, body = c.as(viewerUser).getHX(batch)
	wantNotContains(t, "a viewer's progress", body, `id="resend-batch"`, `id="cancel-batch"`)
}

// A batch's recall is offered only once something was sent on a platform that can take
// it back: never for messages still waiting (cancel is for those), never on the sandbox
// or email, which recall nothing.
func TestBatchRecallOfferedOnlyWhereItCanBe(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	msgs := c.send(nil, "E2001")
	op := c.as(operatorUser)
	page := "/batches/" + msgs["E2001"].BatchID
	_, body := op.get(page)
	wantNotContains(t, "a sandbox batch waiting", body, `id="recall-batch"`)
	c.finish(msgs["E2001"].ID, models.Outcome{Status: models.StatusSent, CountsAttempt: true, Called: true, ProviderMessageID: "p-1"})
	_, body = op.get(page)
	wantNotContains(t, "a sandbox batch sent", body, `id="recall-batch"`)

	// On WeCom, which recalls, a sent batch offers it.
	rc := newRecallConsole(t)
	batch, _ := rc.sent("E2001")
	_, body = rc.as(operatorUser).get("/batches/" + batch)
	wantContains(t, "a WeCom batch sent", body, `id="recall-batch"`)
}
