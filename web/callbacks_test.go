package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"herald/kernel"
	"herald/models"
)

// TestKeyCallbackPage: an admin sets a key's callback on the console (the address guard
// and the secret's length named on their fields), sees the secret once, finds the key's
// events with their delivery state, and sends a delivered one again, audited.
func TestKeyCallbackPage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	admin := c.as(adminUser)
	key, _, err := c.store.Access().CreateAPIKey(ctx, "crm", "send", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("/api-keys/%d/callback", key.ID)

	resp, body := admin.get("/api-keys")
	wantStatus(t, "keys", resp, body, http.StatusOK)
	wantContains(t, "keys", body, `href="`+base+`"`, "callback and events")
	resp, body = admin.get(base)
	wantStatus(t, "callback page", resp, body, http.StatusOK)
	wantContains(t, "callback page", body, "No events. Set a callback URL above")

	resp, body = admin.post(base, url.Values{"url": {"http://10.1.2.3/events"}})
	wantStatus(t, "private URL", resp, body, http.StatusUnprocessableEntity)
	if fieldError(body, "url") == "" {
		t.Errorf("no error on the url field: %s", body)
	}
	resp, body = admin.post(base, url.Values{"url": {"http://10.1.2.3/events"}, "allow_private_network": {"true"}, "secret": {"too-short"}})
	wantStatus(t, "short secret", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "secret", "must be 16–200 characters")
	if k, _ := c.store.Access().APIKeyByID(ctx, key.ID); k.CallbackURL != "" {
		t.Fatalf("a refused callback was stored: %q", k.CallbackURL)
	}

	resp, body = admin.post(base, url.Values{"url": {"http://10.1.2.3/events"}, "allow_private_network": {"true"}})
	wantStatus(t, "set callback", resp, body, http.StatusOK)
	wantContains(t, "set callback", body, "Copy the signing secret now", `id="callback-secret" value="hcs_`)
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the page with the secret may be cached: %q", resp.Header.Get("Cache-Control"))
	}
	if e := c.lastAudit("apikey.callback.set"); !strings.Contains(e.ParamMap()["url"], "10.1.2.3/events") || strings.Contains(*e.Params, "hcs_") {
		t.Errorf("audit: %+v", e)
	}
	resp, body = admin.get(base)
	wantNotContains(t, "callback page again", body, "hcs_")
	wantContains(t, "callback page again", body, "No events yet")

	// A message of the key cancelled: its event and batch.completed wait, listed.
	acct, err := c.store.Sending().DefaultAccount(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	now := kernel.Now()
	b := &models.Batch{ID: models.NewID(), Source: "api", Actor: "apikey:crm", APIKeyID: &key.ID, Platform: acct.Platform,
		AccountID: acct.ID, Priority: models.PriorityNormal, Requested: 1, Accepted: 1}
	m := models.Message{ID: models.NewID(), BatchID: b.ID, RecipientID: c.recipient("E2001").ID, AccountID: acct.ID,
		Platform: acct.Platform, Address: "E2001", MsgType: "text", Content: "x", Priority: models.PriorityNormal,
		Status: models.StatusPending, MaxAttempts: 3, SendAt: now.Add(time.Hour), NextAttemptAt: &now, CallbackKeyID: &key.ID}
	if err := c.store.CreateBatch(ctx, b, []models.Message{m}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.store.CancelMessage(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	resp, body = admin.get(base)
	wantContains(t, "events", body, `data-type="message.cancelled"`, `data-type="batch.completed"`, "E2001", "waiting")
	page, err := c.store.Outbox().CallbackEventsOf(ctx, key.ID, "", 0, 10)
	if err != nil || len(page.Events) != 2 {
		t.Fatalf("events: %+v %v", page, err)
	}
	ev := page.Events[1] // newest first: the message's event is the older
	if ev.Type != models.EventMessageCancelled {
		t.Fatalf("oldest event %+v", ev)
	}
	resend := fmt.Sprintf("/api-keys/%d/events/%s/resend", key.ID, ev.EventID)
	resp, body = admin.post(resend, nil)
	wantStatus(t, "resend a waiting event", resp, body, http.StatusConflict)
	wantContains(t, "resend a waiting event", body, "waiting to be delivered already")

	if err := c.store.Outbox().RecordCallbackResults(ctx, []models.EventResult{{Seq: ev.Seq}}, kernel.Now()); err != nil {
		t.Fatal(err)
	}
	resp, body = admin.get(base + "?state=delivered")
	wantContains(t, "delivered events", body, `data-event="`+ev.EventID+`"`, "Send again")
	wantNotContains(t, "delivered events", body, `data-type="batch.completed"`)
	resp, body = admin.post(resend, nil)
	wantRedirect(t, "resend", resp, body, base)
	if e := c.lastAudit("apikey.callback.resend"); e.TargetID != "crm" || !strings.Contains(e.Detail, ev.EventID) {
		t.Errorf("audit: %+v", e)
	}
	again, _ := c.store.Outbox().CallbackEventsOf(ctx, key.ID, models.EventPending, 0, 10)
	if len(again.Events) != 2 {
		t.Errorf("after send again, %d events wait, want 2", len(again.Events))
	}

	// Removing the callback keeps the events listed.
	resp, body = admin.post(base, url.Values{"url": {""}})
	wantRedirect(t, "remove", resp, body, base)
	if k, _ := c.store.Access().APIKeyByID(ctx, key.ID); k.CallbackURL != "" || k.CallbackSecretEnc != nil {
		t.Errorf("callback not removed: %+v", k)
	}
	if e := c.lastAudit("apikey.callback.remove"); e.TargetID != "crm" {
		t.Errorf("audit: %+v", e)
	}
}

// TestCallbackSettingThroughTheAPI: an admin sets a key's callback over the API, the
// address guard applies, the secret is shown once and stored sealed, and a request that
// names its own callback URL is refused.
func TestCallbackSettingThroughTheAPI(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	admin := c.apiKey("test-admin", "admin")
	sender := c.apiKey("test-send", "send")

	code, body, _ := admin.call("PUT", "/api/v1/api-keys/test-send/callback", `{"url":"http://127.0.0.1:9/events"}`)
	if code != http.StatusUnprocessableEntity || errorField(body) != "url" {
		t.Fatalf("a loopback URL without allow_private_network: %d %v", code, body["_raw"])
	}
	code, body, _ = admin.call("PUT", "/api/v1/api-keys/test-send/callback", `{"url":"http://127.0.0.1:9/events","secret":"short"}`)
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("a short secret: %d %v", code, body["_raw"])
	}
	code, body, _ = admin.call("PUT", "/api/v1/api-keys/test-send/callback",
		`{"url":"http://127.0.0.1:9/events","secret":"a-secret-of-our-own-choosing","allow_private_network":true}`)
	if code != http.StatusOK || body["secret"] != "a-secret-of-our-own-choosing" || body["url"] != "http://127.0.0.1:9/events" {
		t.Fatalf("set callback: %d %v", code, body["_raw"])
	}
	var enc string
	if err := c.store.SQL().QueryRow("SELECT callback_secret_enc FROM api_keys WHERE name = 'test-send'").Scan(&enc); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(enc, "a-secret-of-our-own-choosing") || !strings.HasPrefix(enc, "v1:") {
		t.Errorf("the secret is not sealed at rest: %q", enc)
	}
	var detail, params string
	if err := c.store.SQL().QueryRow("SELECT detail, COALESCE(params, '') FROM audit_log WHERE action = 'apikey.callback.set'").Scan(&detail, &params); err != nil {
		t.Fatalf("no audit entry: %v", err)
	}
	if strings.Contains(detail+params, "a-secret") || !strings.Contains(params, "127.0.0.1:9/events") {
		t.Errorf("audit entry: detail %q, params %q", detail, params)
	}
	if code, body, _ := admin.call("PUT", "/api/v1/api-keys/nobody/callback", `{"url":""}`); code != http.StatusNotFound {
		t.Errorf("unknown key: %d %v", code, body["_raw"])
	}

	code, body, _ = sender.call("POST", "/api/v1/messages", `{"platform":"tianyuan","recipients":["E1001"],"content":{"text":"x"},"callback_url":"http://127.0.0.1:9/x"}`)
	if code != http.StatusBadRequest || errorField(body) != "callback_url" {
		t.Errorf("a per-request callback_url: %d %v", code, body["_raw"])
	}
}
