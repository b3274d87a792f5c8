package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/dispatch"
	"herald/kernel"
	"herald/models"
)

// ackAlert opens an alert on the sandbox account to the named people and returns the
// console with acknowledgment links turned on, the alert and each person's message.
func (c *console) ackAlert(people ...string) (*alert.Alert, map[string]models.Message) {
	c.t.Helper()
	return c.ackAlertWith(func(*dispatch.Request) {}, people...)
}

// ackAlertWith is ackAlert with the request changed by adjust before it is sent.
func (c *console) ackAlertWith(adjust func(*dispatch.Request), people ...string) (*alert.Alert, map[string]models.Message) {
	c.t.Helper()
	ctx := context.Background()
	d := c.h.Dispatch
	if _, err := alert.Of(c.store).PolicyByName(ctx, "ack-test"); errors.Is(err, kernel.ErrNotFound) {
		if _, err := d.Alerts().CreatePolicy(ctx, audit.System("test"), alert.EscalationPolicy{Name: "ack-test",
			Steps: []alert.PolicyStep{{Targets: []string{"E1001"}, Wait: "10m"}}}); err != nil {
			c.t.Fatal(err)
		}
	}
	acct, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		c.t.Fatal(err)
	}
	req := dispatch.Request{Source: "api", Actor: "test", AccountID: acct.ID, Recipients: people,
		Subject: "Core banking alarm", Text: "Transfers failing since 02:10", Ack: &dispatch.AckRequest{Policy: "ack-test"}}
	adjust(&req)
	res, err := d.Submit(ctx, req)
	if err != nil {
		c.t.Fatal(err)
	}
	if res.Alert == nil {
		c.t.Fatal("the send opened no alert")
	}
	out := map[string]models.Message{}
	for _, m := range res.Messages {
		out[res.Names[m.RecipientID]] = m
	}
	return res.Alert, out
}

// ackPath is the page of a message's link.
func (c *console) ackPath(m models.Message) string {
	return alert.AckLinkPath + c.ackLinks.Token(m.ID, m.RecipientID)
}

func (c *console) alert(id int64) *alert.Alert {
	c.t.Helper()
	a, err := alert.Of(c.store).AlertByID(context.Background(), id)
	if err != nil {
		c.t.Fatal(err)
	}
	return a
}

// The link opens a page without a console login, in the reader's language, and
// acknowledges as the person it was sent to, via "link"; the second person's tap says
// who was first and changes nothing.
func TestAckLinkAcknowledgesAsItsRecipient(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	a, msgs := c.ackAlert("E2001", "E2002")
	anon := c.as("")

	resp, body := anon.do("GET", c.ackPath(msgs["E2001"]), "", nil, map[string]string{"Accept-Language": "zh-CN,zh;q=0.9"})
	wantStatus(t, "link page (zh-CN)", resp, body, http.StatusOK)
	wantContains(t, "link page (zh-CN)", body, "Core banking alarm", "Transfers failing since 02:10", "我来处理", "已解决", "等待接手")
	// The notice carries its link; the page it opens does not show it again.
	if !strings.Contains(msgs["E2001"].Content, c.ackPath(msgs["E2001"])) {
		t.Errorf("the notice's content lacks its link:\n%s", msgs["E2001"].Content)
	}
	wantNotContains(t, "link page (zh-CN)", body, c.ackPath(msgs["E2001"]))
	resp, body = anon.get(c.ackPath(msgs["E2001"]))
	wantStatus(t, "link page (en)", resp, body, http.StatusOK)
	wantContains(t, "link page (en)", body, "I&#39;ll handle it", "Resolved", "Waiting for someone")
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", got)
	}

	page := c.ackPath(msgs["E2001"])
	body = tapAck(t, anon, page, "ack", "tap 我来处理")
	wantContains(t, "tap 我来处理", body, "You took this alert at ", "the escalation has stopped")
	wantNotContains(t, "tap 我来处理", body, "before you", `id="ack-take"`)
	got := c.alert(a.ID)
	if got.State != alert.AlertAcknowledged || got.AcknowledgedBy != "E2001" || got.AcknowledgedVia != alert.AckViaLink {
		t.Errorf("alert after the tap: state %s by %q via %q; want acknowledged by E2001 via link", got.State, got.AcknowledgedBy, got.AcknowledgedVia)
	}
	entry := c.lastAudit("alert.acknowledge")
	if entry.Actor != alert.ActorAckLink || entry.Params == nil || !strings.Contains(*entry.Params, `"via":"link"`) {
		t.Errorf("audit entry %+v: want actor %s and via link", entry, alert.ActorAckLink)
	}
	first := c.recipient("E2001").Name
	entries := c.auditCount("alert.acknowledge")

	// Reloading the page the tap landed on changes nothing and says the same; so does a
	// form sent again, as a browser's "resubmit" would: the person who took it is never
	// told that they took it "before you".
	resp, reloaded := anon.get(page)
	wantStatus(t, "reload", resp, reloaded, http.StatusOK)
	if reloaded != body {
		t.Errorf("the reloaded page differs from the one the tap landed on:\n%s\n---\n%s", body, reloaded)
	}
	body = tapAck(t, anon, page, "ack", "tap 我来处理 again")
	wantContains(t, "tap 我来处理 again", body, "You took this alert at ")
	wantNotContains(t, "tap 我来处理 again", body, "before you", first+" took")
	resp, body = anon.do("GET", page, "", nil, map[string]string{"Accept-Language": "zh-CN"})
	wantStatus(t, "reload (zh-CN)", resp, body, http.StatusOK)
	wantContains(t, "reload (zh-CN)", body, "你已于 ", "接手此告警，升级通知已停止")
	wantNotContains(t, "reload (zh-CN)", body, "先于你")
	if n := c.auditCount("alert.acknowledge"); n != entries {
		t.Errorf("reloading and tapping again wrote %d more acknowledgment entries", n-entries)
	}

	// The second person, arriving after the first took it, sees who did and when,
	// before and after tapping.
	second := c.ackPath(msgs["E2002"])
	at := got.AcknowledgedAt.In(c.loc).Format(time.TimeOnly)
	resp, body = anon.get(second)
	wantStatus(t, "second person's page", resp, body, http.StatusOK)
	wantContains(t, "second person's page", body, first+" took this alert before you, at ", at)
	body = tapAck(t, anon, second, "ack", "second tap")
	wantContains(t, "second tap", body, first+" took this alert before you, at ", at)
	wantNotContains(t, "second tap", body, "You took this alert")
	resp, body = anon.do("GET", second, "", nil, map[string]string{"Accept-Language": "zh-CN"})
	wantStatus(t, "second tap (zh-CN)", resp, body, http.StatusOK)
	wantContains(t, "second tap (zh-CN)", body, first+" 已先于你在 ")
	if got := c.alert(a.ID); got.AcknowledgedBy != "E2001" {
		t.Errorf("the second tap moved the acknowledgment to %q", got.AcknowledgedBy)
	}
	if n := c.auditCount("alert.acknowledge"); n != entries {
		t.Errorf("the second tap wrote %d more acknowledgment entries", n-entries)
	}
}

// tapAck posts a tap on the link's page and follows its answer, which must be a 303
// back to the page itself, returning the page it lands on.
func tapAck(t *testing.T, cl *client, page, action, what string) string {
	t.Helper()
	resp, body := cl.post(page, url.Values{"action": {action}})
	wantStatus(t, what, resp, body, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != page {
		t.Fatalf("%s: redirected to %q, want the page itself %q", what, loc, page)
	}
	resp, body = cl.get(page)
	wantStatus(t, what+": the page after", resp, body, http.StatusOK)
	return body
}

// An altered link, and a link signed for another person's message, open nothing and
// change nothing; a cross-origin form is refused before the page.
func TestAckLinkRefusesAlteredAndForeignLinks(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	a, msgs := c.ackAlert("E2001", "E2002")
	anon := c.as("")
	good := c.ackPath(msgs["E2001"])
	last := good[len(good)-1]
	flip := map[byte]byte{'A': 'B'}[last]
	if flip == 0 {
		flip = 'A'
	}
	altered := good[:len(good)-1] + string(flip)
	// Signed by Herald, but naming E2001's message with E2002 as its recipient.
	foreign := alert.AckLinkPath + c.ackLinks.Token(msgs["E2001"].ID, msgs["E2002"].RecipientID)
	for _, path := range []string{altered, foreign, alert.AckLinkPath + "not-a-token"} {
		resp, body := anon.get(path)
		wantStatus(t, "GET "+path, resp, body, http.StatusNotFound)
		wantContains(t, "GET "+path, body, "This link is not valid")
		wantNotContains(t, "GET "+path, body, "Core banking alarm")
		resp, body = anon.post(path, url.Values{"action": {"ack"}})
		wantStatus(t, "POST "+path, resp, body, http.StatusNotFound)
	}
	resp, body := anon.do("POST", good, "application/x-www-form-urlencoded", strings.NewReader("action=ack"),
		map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
	wantStatus(t, "cross-origin tap", resp, body, http.StatusForbidden)
	resp, body = anon.post(good, url.Values{"action": {"delete"}})
	wantStatus(t, "unknown action", resp, body, http.StatusBadRequest)
	if got := c.alert(a.ID); got.State != alert.AlertOpen {
		t.Errorf("alert is %s after refused requests, want open", got.State)
	}
}

// Resolving ends the alert: the page says so and offers no buttons; a day after the
// end the link has expired (the dispatcher's clock moved on, not the test's).
func TestAckLinkAfterTheAlertEnds(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	a, msgs := c.ackAlert("E2001")
	anon := c.as("")
	path := c.ackPath(msgs["E2001"])

	body := tapAck(t, anon, path, "resolve", "tap 已解决")
	wantContains(t, "tap 已解决", body, "You marked this alert resolved at ")
	if got := c.alert(a.ID); got.State != alert.AlertResolved || got.ResolvedVia != alert.AckViaLink || got.EndedAt == nil {
		t.Fatalf("alert after resolving: %+v", got)
	}
	resp, body := anon.get(path)
	wantStatus(t, "ended alert", resp, body, http.StatusOK)
	wantContains(t, "ended alert", body, "This alert is over")
	wantNotContains(t, "ended alert", body, `name="action"`)
	body = tapAck(t, anon, path, "ack", "tap on an ended alert")
	wantContains(t, "tap on an ended alert", body, "You marked this alert resolved at ", "This alert is over")
	if got := c.alert(a.ID); got.State != alert.AlertResolved || got.AcknowledgedBy != "" {
		t.Errorf("a tap on an ended alert changed it: %+v", got)
	}

	c.clockOffset.Store(int64(alert.AckLinkLife - time.Minute))
	if resp, body := anon.get(path); resp.StatusCode != http.StatusOK {
		t.Errorf("a minute before the link expires: %d\n%s", resp.StatusCode, body)
	}
	c.clockOffset.Store(int64(alert.AckLinkLife + time.Minute))
	resp, body = anon.get(path)
	wantStatus(t, "expired link", resp, body, http.StatusGone)
	wantContains(t, "expired link", body, "This link has expired")
	resp, body = anon.do("GET", path, "", nil, map[string]string{"Accept-Language": "zh-CN"})
	wantStatus(t, "expired link (zh-CN)", resp, body, http.StatusGone)
	wantContains(t, "expired link (zh-CN)", body, "此链接已过期")
}

// An alert someone took and nobody resolved does not keep its links for ever: a week
// after the acknowledgment they have expired (410), in both languages.
func TestAckLinkOfATakenAlertExpiresAfterAWeek(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	a, msgs := c.ackAlert("E2001")
	anon := c.as("")
	path := c.ackPath(msgs["E2001"])
	tapAck(t, anon, path, "ack", "tap 我来处理")
	if got := c.alert(a.ID); got.State != alert.AlertAcknowledged {
		t.Fatalf("alert is %s after the tap, want acknowledged", got.State)
	}
	c.clockOffset.Store(int64(alert.AckLinkIdleLife - time.Minute))
	if resp, body := anon.get(path); resp.StatusCode != http.StatusOK {
		t.Errorf("a minute before the link expires: %d\n%s", resp.StatusCode, body)
	}
	c.clockOffset.Store(int64(alert.AckLinkIdleLife + time.Minute))
	resp, body := anon.get(path)
	wantStatus(t, "a week after the acknowledgment", resp, body, http.StatusGone)
	wantContains(t, "a week after the acknowledgment", body, "seven days after it was taken")
	wantNotContains(t, "a week after the acknowledgment", body, "Core banking alarm")
	resp, body = anon.post(path, url.Values{"action": {"resolve"}})
	wantStatus(t, "resolve a week after the acknowledgment", resp, body, http.StatusGone)
	resp, body = anon.do("GET", path, "", nil, map[string]string{"Accept-Language": "zh-CN"})
	wantStatus(t, "expired link (zh-CN)", resp, body, http.StatusGone)
	wantContains(t, "expired link (zh-CN)", body, "接手 7 天后链接失效")
	if got := c.alert(a.ID); got.State != alert.AlertAcknowledged {
		t.Errorf("an expired link changed the alert: %s", got.State)
	}
}

// Only the people the alert has called so far act through their links: the link of a
// notice still awaiting approval, or scheduled for later, neither takes nor resolves
// the alert (409, in both languages), though Herald signed it.
func TestAckLinkActsOnlyForPeopleCalled(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	later := time.Now().Add(time.Hour)
	scheduled, scheduledMsgs := c.ackAlertWith(func(r *dispatch.Request) { r.SendAt = &later }, "E2001")
	if err := c.store.Intake().SetApprovalThreshold(ctx, 1, "admin"); err != nil {
		t.Fatal(err)
	}
	c.h.Dispatch.ForgetThreshold()
	held, heldMsgs := c.ackAlert("E2001", "E2002")
	anon := c.as("")
	for _, tc := range []struct {
		name  string
		alert *alert.Alert
		m     models.Message
	}{
		{"awaiting approval", held, heldMsgs["E2001"]},
		{"scheduled", scheduled, scheduledMsgs["E2001"]},
	} {
		for _, action := range []string{"resolve", "ack"} {
			resp, body := anon.post(c.ackPath(tc.m), url.Values{"action": {action}})
			wantStatus(t, tc.name+" "+action, resp, body, http.StatusConflict)
			wantContains(t, tc.name+" "+action, body, "has not reached you yet")
		}
		resp, body := anon.do("POST", c.ackPath(tc.m), "application/x-www-form-urlencoded", strings.NewReader("action=resolve"),
			map[string]string{"Accept-Language": "zh-CN"})
		wantStatus(t, tc.name+" (zh-CN)", resp, body, http.StatusConflict)
		wantContains(t, tc.name+" (zh-CN)", body, "只有告警已通知到的人")
		if got := c.alert(tc.alert.ID); got.State != alert.AlertOpen || got.AcknowledgedBy != "" {
			t.Errorf("%s: a link of a notice not yet sent changed the alert: %s by %q", tc.name, got.State, got.AcknowledgedBy)
		}
	}
}
