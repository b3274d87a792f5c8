package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"herald/alert"
	"herald/audit"
	"herald/inbound"
)

// integrationForm is the console's integration form as a browser posts it: route rows
// with their matcher rows, then the default route.
func integrationForm(name, format string, routes ...map[string]string) url.Values {
	form := url.Values{"name": {name}, "format": {format}, "notify_on_resolve": {"1"}, "route_rows": {fmt.Sprint(len(routes))}}
	for i, r := range routes {
		form.Set(fmt.Sprintf("routes[%d].matcher_rows", i), "2")
		for k, v := range r {
			form.Set(fmt.Sprintf("routes[%d].%s", i, k), v)
		}
	}
	return form
}

// tokenOf reads the token shown on the token page.
func tokenOf(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`id="token" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no token on the page:\n%s", body)
	}
	return m[1]
}

// TestIntegrationsConsole makes an integration through the console's form (a mistake
// shown beside the route row it is about, what was typed kept), sees its token once
// with the snippets that use it, edits a route, replaces the token (the old one is
// refused at the push URL), sees an event posted there on the integration's page in
// both languages, and deletes it. The token is never on another page nor in the audit.
func TestIntegrationsConsole(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	if err := alert.Of(c.store).CreatePolicy(ctx, &alert.EscalationPolicy{Name: "night",
		Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}}); err != nil {
		t.Fatal(err)
	}
	admin := c.as(adminUser)

	resp, body := admin.get("/alerts")
	wantContains(t, "the alerts page links the integrations", body, `href="/integrations"`)
	resp, body = admin.get("/integrations")
	wantStatus(t, "empty list", resp, body, http.StatusOK)
	wantContains(t, "empty list", body, `id="integrations-empty"`, "New integration", `href="/integrations/new"`)
	resp, body = admin.get("/integrations/new")
	wantStatus(t, "new form", resp, body, http.StatusOK)
	wantContains(t, "new form", body, `name="routes[0].policy"`, `<option value="night">night</option>`, `name="default_route.platform"`)

	// "Add a route" gives the form back with one more row, nothing saved.
	blank := map[string]string{}
	bad := map[string]string{"matchers[0].name": "label:team", "matchers[0].value": "core", "policy": "nosuch", "platform": "sandbox"}
	form := integrationForm("prom", inbound.FormatEvents, blank, bad)
	form.Set("more", "route")
	resp, body = admin.post("/integrations", form)
	wantStatus(t, "add a route", resp, body, http.StatusOK)
	wantContains(t, "add a route", body, `name="routes[2].policy"`, `value="label:team"`)
	form.Set("more", "matcher:1")
	resp, body = admin.post("/integrations", form)
	wantContains(t, "add a matcher", body, `name="routes[1].matchers[2].name"`)

	// The blank first row is skipped: the service's routes[0] is the form's second row.
	form.Del("more")
	resp, body = admin.post("/integrations", form)
	wantStatus(t, "an unknown policy", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "routes[1].policy", "nosuch")
	wantContains(t, "the form keeps what was typed", body, `value="label:team"`, `value="core"`)

	custom := integrationForm("mapped", inbound.FormatCustom)
	custom.Set("mapping", `{"title": "{{.name}}"`)
	resp, body = admin.post("/integrations", custom)
	wantStatus(t, "bad mapping JSON", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "mapping", "JSON")

	good := map[string]string{"matchers[0].name": "label:team", "matchers[0].value": "core", "policy": "night", "platform": "sandbox", "recipients": "E1001"}
	form = integrationForm("prom", inbound.FormatEvents, blank, good)
	form.Set("default_route.policy", "night")
	form.Set("default_route.platform", "sandbox")
	resp, body = admin.post("/integrations", form)
	wantStatus(t, "create", resp, body, http.StatusCreated)
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("the token page may be cached: Cache-Control %q", cc)
	}
	token := tokenOf(t, body)
	push := "https://herald.example/api/v1/inbound/prom"
	wantContains(t, "token page", html.UnescapeString(body), push, "webhook_configs:", "credentials: "+token,
		`id="zabbix-script"`, strings.SplitN(inbound.ZabbixScript, "\n", 2)[0], ">herald_token</td>", ">"+token+"</td>", ">"+push+"</td>",
		"curl -X POST '"+push+"' -H 'Authorization: Bearer "+token+"'")

	it, err := c.h.Dispatch.Inbound().Integration(ctx, "prom")
	if err != nil || len(it.Routes) != 1 || it.Routes[0].Policy != "night" || it.DefaultRoute == nil || !it.NotifyOnResolve {
		t.Fatalf("saved integration %+v (%v)", it, err)
	}
	if e := c.lastAudit("integration.create"); strings.Contains(fmt.Sprintf("%+v", e), token) {
		t.Errorf("the audit holds the token: %+v", e)
	}
	resp, body = admin.get("/integrations")
	wantContains(t, "list", body, `data-integration="prom"`, push, "Herald events")
	wantNotContains(t, "list", body, token)
	resp, body = admin.get("/integrations/prom")
	wantStatus(t, "integration page", resp, body, http.StatusOK)
	wantContains(t, "integration page", body, `id="events-empty"`, "label:team=&#34;core&#34;", `action="/integrations/prom/token"`, "data-confirm")
	wantNotContains(t, "integration page", body, token)

	// Edit: the route now takes the db team's events at high priority.
	resp, body = admin.get("/integrations/prom/edit")
	wantStatus(t, "edit form", resp, body, http.StatusOK)
	wantContains(t, "edit form", body, `value="label:team"`, `value="E1001"`, `id="name" value="prom" disabled`)
	wantContains(t, "edit form", body, `<option value="zh-CN" selected`)
	edit := integrationForm("ignored", "ignored", map[string]string{"matchers[0].name": "label:team", "matchers[0].value": "db",
		"policy": "night", "platform": "sandbox", "priority": "high", "recipients": "E1001, E1002"})
	edit.Set("language", "fr")
	resp, body = admin.post("/integrations/prom/edit", edit)
	wantFieldError(t, body, "language", "en")
	edit.Set("language", "en")
	resp, body = admin.post("/integrations/prom/edit", edit)
	wantRedirect(t, "edit", resp, body, "/integrations/prom")
	it, err = c.h.Dispatch.Inbound().Integration(ctx, "prom")
	if err != nil || it.Format != inbound.FormatEvents || len(it.Routes) != 1 || it.Routes[0].Matchers[0].Value != "db" ||
		it.Routes[0].Priority != "high" || len(it.Routes[0].Recipients) != 2 || it.DefaultRoute != nil || it.Language != "en" {
		t.Fatalf("edited integration %+v (%v)", it, err)
	}

	// A cross-origin post changes nothing.
	resp, _ = admin.do("POST", "/integrations/prom/token", "application/x-www-form-urlencoded", strings.NewReader(""),
		map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin new token: %d, want 403", resp.StatusCode)
	}
	resp, body = admin.post("/integrations/prom/token", nil)
	wantStatus(t, "new token", resp, body, http.StatusOK)
	fresh := tokenOf(t, body)
	if fresh == token {
		t.Fatal("the new token is the old one")
	}
	event := `{"event_action":"trigger","dedup_key":"db1::disk","severity":"critical","title":"磁盘将满","labels":{"team":"db"}}`
	push1 := func(tok string) (int, string) {
		resp, body := c.as("").do("POST", "/api/v1/inbound/prom", "application/json", strings.NewReader(event), map[string]string{"Authorization": "Bearer " + tok})
		return resp.StatusCode, body
	}
	if status, body := push1(token); status != http.StatusUnauthorized {
		t.Errorf("the old token: %d, want 401\n%s", status, body)
	}
	if status, body := push1(fresh); status != http.StatusOK || !strings.Contains(body, `"outcome":"created"`) {
		t.Fatalf("the new token: %d\n%s", status, body)
	}
	alerts, err := alert.Of(c.store).Alerts(ctx, alert.AlertFilter{}, 10)
	if err != nil || len(alerts) != 1 {
		t.Fatalf("alerts %+v (%v)", alerts, err)
	}
	resp, body = admin.get("/integrations/prom")
	wantContains(t, "events", body, `data-outcome="created"`, ">created<", "db1::disk", fmt.Sprintf(`href="/alerts/%d"`, alerts[0].ID),
		"<details>", "磁盘将满")
	wantNotContains(t, "events", body, fresh)
	_, body = admin.do("GET", "/integrations/prom", "", nil, map[string]string{"Accept-Language": "zh-CN"})
	wantContains(t, "events in Chinese", body, ">已创建<", "收到的事件")

	resp, body = admin.post("/integrations/prom/delete", nil)
	wantRedirect(t, "delete", resp, body, "/integrations")
	resp, body = admin.get("/integrations")
	wantContains(t, "after delete", body, `id="integrations-empty"`, "prom")
	if status, _ := push1(fresh); status != http.StatusUnauthorized {
		t.Errorf("a deleted integration's token: %d, want 401", status)
	}
	resp, body = admin.get("/integrations/prom")
	wantStatus(t, "a deleted integration's page", resp, body, http.StatusNotFound)
}

// integrationWithEvents makes an integration whose default route opens alerts on the
// sandbox, and posts it an event with long words and a body it refuses: what the pages
// must lay out.
func (c *console) integrationWithEvents(name string) {
	c.t.Helper()
	ctx := context.Background()
	if err := alert.Of(c.store).CreatePolicy(ctx, &alert.EscalationPolicy{Name: name + "-policy",
		Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}}); err != nil {
		c.t.Fatal(err)
	}
	svc := c.h.Dispatch.Inbound()
	it, _, err := svc.CreateIntegration(ctx, audit.Actor{Name: adminUser, Type: audit.ActorUser}, inbound.IntegrationInput{Name: name,
		Format: inbound.FormatEvents, DefaultRoute: &inbound.Route{Policy: name + "-policy", Platform: "sandbox"}})
	if err != nil {
		c.t.Fatal(err)
	}
	long := strings.Repeat("核心交易系统数据库主库磁盘", 8)
	for _, body := range []string{
		`{"event_action":"trigger","dedup_key":"` + strings.Repeat("db-primary-01.example.internal::", 4) + `","severity":"critical","title":"` + long + `"}`,
		`{"event_action":"trigger","severity":"critical","title":"` + long + `"}`,
	} {
		if _, err := svc.Receive(ctx, it, []byte(body)); err != nil && !strings.Contains(err.Error(), "dedup_key") {
			c.t.Fatal(err)
		}
	}
}
