package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/inbound"
)

// heartbeatForm is the console's heartbeat form as a browser posts it, its route
// fields under route.
func heartbeatForm(name, interval, grace, days string, route map[string]string) url.Values {
	form := url.Values{"name": {name}, "interval": {interval}, "grace": {grace}, "days": {days}}
	for k, v := range route {
		form.Set("route."+k, v)
	}
	return form
}

// TestHeartbeatsConsole makes a heartbeat through the console's form (a mistake shown
// beside its field, what was typed kept), sees its token once with the cron line and
// the Watchdog receiver that use it, edits it (its due time moved by the shorter
// interval), replaces the token (the old one refused at the ping URL), sees a missed
// ping's alert linked from the list and resolved by a ping, and deletes it. The token
// is never on another page nor in the audit.
func TestHeartbeatsConsole(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	if err := alert.Of(c.store).CreatePolicy(ctx, &alert.EscalationPolicy{Name: "night",
		Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}}); err != nil {
		t.Fatal(err)
	}
	admin := c.as(adminUser)
	svc := c.h.Dispatch.Inbound()

	_, body := admin.get("/integrations")
	wantContains(t, "the integrations page links the heartbeats", body, `href="/heartbeats"`)
	resp, body := admin.get("/heartbeats")
	wantStatus(t, "empty list", resp, body, http.StatusOK)
	wantContains(t, "empty list", body, `id="heartbeats-empty"`, "New heartbeat", `href="/heartbeats/new"`)
	resp, body = admin.get("/heartbeats/new")
	wantStatus(t, "new form", resp, body, http.StatusOK)
	wantContains(t, "new form", body, `name="route.policy"`, `<option value="night">night</option>`, `name="route.platform"`,
		`name="days"`, `<option value="workdays">Working days</option>`, `value="24h"`)

	route := map[string]string{"policy": "night", "platform": "sandbox", "recipients": "E1001"}
	resp, body = admin.post("/heartbeats", heartbeatForm("eod", "10s", "10m", "workdays", route))
	wantStatus(t, "an interval under a minute", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "interval", "1m to 168h")
	wantContains(t, "the form keeps what was typed", body, `value="eod"`, `value="10s"`, `value="E1001"`, `<option value="workdays" selected>`)
	resp, body = admin.post("/heartbeats", heartbeatForm("eod", "24h", "10m", "", map[string]string{"policy": "nosuch", "platform": "sandbox"}))
	wantStatus(t, "an unknown policy", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "route.policy", "nosuch")
	resp, body = admin.post("/heartbeats", heartbeatForm("eod", "24h", "10m", "", map[string]string{"policy": "night", "platform": "sandbox", "recipients": "E1001, E9999"}))
	wantStatus(t, "an unknown person", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "route.recipients", "E9999")

	resp, body = admin.post("/heartbeats", heartbeatForm("eod", "24h", "10m", "workdays", route))
	wantStatus(t, "create", resp, body, http.StatusCreated)
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("the token page may be cached: Cache-Control %q", cc)
	}
	token := tokenOf(t, body)
	ping := "https://herald.example/api/v1/heartbeats/eod/ping"
	wantContains(t, "token page", html.UnescapeString(body), `id="ping_url" value="`+ping+`"`,
		"curl -fsS -m 10 --retry 3 -H 'Authorization: Bearer "+token+"' '"+ping+"'",
		`alertname = "Watchdog"`, "webhook_configs:", "url: "+ping, "credentials: "+token)
	if e := c.lastAudit("heartbeat.create"); strings.Contains(fmt.Sprintf("%+v", e), token) {
		t.Errorf("the audit holds the token: %+v", e)
	}
	created, err := svc.Heartbeat(ctx, "eod")
	if err != nil || created.Days != inbound.DaysWorkdays || created.Route.Policy != "night" || len(created.Route.Recipients) != 1 {
		t.Fatalf("saved heartbeat %+v (%v)", created, err)
	}

	resp, body = admin.get("/heartbeats")
	wantContains(t, "list", body, `data-heartbeat="eod"`, `href="/heartbeats/eod/edit"`, ">24h<", ">10m<", ">Working days<", ">waiting<")
	wantNotContains(t, "list", body, token)
	_, body = admin.do("GET", "/heartbeats", "", nil, map[string]string{"Accept-Language": "zh-CN"})
	wantContains(t, "list in Chinese", body, ">工作日<", ">等待报到<", "上次报到")

	// Edit: every 12 hours, every day, at high priority.
	resp, body = admin.get("/heartbeats/eod/edit")
	wantStatus(t, "edit form", resp, body, http.StatusOK)
	wantContains(t, "edit form", body, `id="name" value="eod" disabled`, `value="24h"`, `value="10m"`, `<option value="workdays" selected>`,
		`value="E1001"`, `action="/heartbeats/eod/token"`, `action="/heartbeats/eod/delete"`, "data-confirm")
	wantNotContains(t, "edit form", body, token)
	resp, body = admin.post("/heartbeats/eod/edit", heartbeatForm("ignored", "12h", "2d", "", route))
	wantStatus(t, "a grace of two days", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "grace", "24h")
	edit := heartbeatForm("ignored", "12h", "5m", "", map[string]string{"policy": "night", "platform": "sandbox", "priority": "high"})
	resp, body = admin.post("/heartbeats/eod/edit", edit)
	wantRedirect(t, "edit", resp, body, "/heartbeats")
	edited, err := svc.Heartbeat(ctx, "eod")
	if err != nil || edited.Interval() != 12*time.Hour || edited.Grace() != 5*time.Minute || edited.Days != "" ||
		edited.Route.Priority != "high" || len(edited.Route.Recipients) != 0 || edited.TokenHash != created.TokenHash {
		t.Fatalf("edited heartbeat %+v (%v)", edited, err)
	}
	if !edited.DueAt.Before(created.DueAt) {
		t.Errorf("due %s after the edit, not sooner than %s: the shorter interval moves it", edited.DueAt, created.DueAt)
	}
	_, body = admin.get("/heartbeats")
	wantContains(t, "after the edit", body, "eod", ">12h<", ">5m<", ">Every day<")

	// A cross-origin post changes nothing.
	resp, _ = admin.do("POST", "/heartbeats/eod/token", "application/x-www-form-urlencoded", strings.NewReader(""),
		map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin new token: %d, want 403", resp.StatusCode)
	}
	resp, body = admin.post("/heartbeats/eod/token", nil)
	wantStatus(t, "new token", resp, body, http.StatusOK)
	wantContains(t, "new token", body, "New token for heartbeat eod")
	fresh := tokenOf(t, body)
	if fresh == token {
		t.Fatal("the new token is the old one")
	}
	pingWith := func(tok string) int {
		resp, _ := c.as("").get("/api/v1/heartbeats/eod/ping?token=" + url.QueryEscape(tok))
		return resp.StatusCode
	}
	if status := pingWith(token); status != http.StatusUnauthorized {
		t.Errorf("the old token: %d, want 401", status)
	}
	if status := pingWith(fresh); status != http.StatusOK {
		t.Fatalf("the new token: %d", status)
	}

	// A ping missed: the list links its alert; the next ping resolves it.
	if n, err := svc.CheckHeartbeats(ctx, time.Now().Add(13*time.Hour)); err != nil || n != 1 {
		t.Fatalf("check: %d alerts, %v", n, err)
	}
	missed, err := svc.Heartbeat(ctx, "eod")
	if err != nil || missed.AlertID == nil {
		t.Fatalf("missed heartbeat %+v (%v)", missed, err)
	}
	_, body = admin.get("/heartbeats")
	wantContains(t, "a missed ping", body, ">missed<", fmt.Sprintf(`href="/alerts/%d"`, *missed.AlertID))
	if status := pingWith(fresh); status != http.StatusOK {
		t.Fatalf("the ping after the miss: %d", status)
	}
	if a, err := alert.Of(c.store).AlertByID(ctx, *missed.AlertID); err != nil || a.State != alert.AlertResolved {
		t.Errorf("the missed ping's alert after a ping: %+v (%v)", a, err)
	}
	_, body = admin.get("/heartbeats")
	wantContains(t, "pinged again", body, ">waiting<")

	resp, body = admin.post("/heartbeats/eod/delete", nil)
	wantRedirect(t, "delete", resp, body, "/heartbeats")
	_, body = admin.get("/heartbeats")
	wantContains(t, "after delete", body, `id="heartbeats-empty"`, "eod")
	if status := pingWith(fresh); status != http.StatusUnauthorized {
		t.Errorf("a deleted heartbeat's token: %d, want 401", status)
	}
	resp, body = admin.get("/heartbeats/eod/edit")
	wantStatus(t, "a deleted heartbeat's form", resp, body, http.StatusNotFound)
	if e := c.lastAudit("heartbeat.token"); e.TargetID != "eod" || strings.Contains(fmt.Sprintf("%+v", e), fresh) {
		t.Errorf("the new token's audit entry: %+v", e)
	}
	if e := c.lastAudit("heartbeat.update"); e.ParamMap()["interval"] != "12h0m0s" {
		t.Errorf("the edit's audit entry: %+v", e)
	}
}

// heartbeatMissed makes a heartbeat under policy whose ping was missed, and one that
// waits for its first: the two states the list must lay out.
func (c *console) heartbeatMissed(name, policy string) {
	c.t.Helper()
	ctx := context.Background()
	svc := c.h.Dispatch.Inbound()
	by := audit.Actor{Name: adminUser, Type: audit.ActorUser}
	route := inbound.Route{Policy: policy, Platform: "sandbox"}
	if _, _, err := svc.CreateHeartbeat(ctx, by, inbound.HeartbeatInput{Name: name, Interval: "10m", Grace: "1m", Route: route}); err != nil {
		c.t.Fatal(err)
	}
	if n, err := svc.CheckHeartbeats(ctx, time.Now().Add(time.Hour)); err != nil || n != 1 {
		c.t.Fatalf("check: %d alerts, %v", n, err)
	}
	if _, _, err := svc.CreateHeartbeat(ctx, by, inbound.HeartbeatInput{Name: name + "-end-of-day-batch-settlement", Interval: "24h",
		Grace: "30m", Days: inbound.DaysWorkdays, Route: route}); err != nil {
		c.t.Fatal(err)
	}
}
