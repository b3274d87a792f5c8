package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"herald/access"
	"herald/alert"
	"herald/audit"
	"herald/inbound"
	"herald/incident"
	"herald/internal/testenv"
)

// nodeDownBody is an Alertmanager body of n NodeDown alerts in cluster sh-core.
func nodeDownBody(t *testing.T, status string, n int) string {
	t.Helper()
	alerts := make([]map[string]any, n)
	for i := range alerts {
		instance := fmt.Sprintf("core-bank-node-%02d", i+1)
		alerts[i] = map[string]any{"status": status, "fingerprint": "sh-core-" + instance,
			"labels":      map[string]string{"alertname": "NodeDown", "cluster": "sh-core", "instance": instance, "severity": "critical"},
			"annotations": map[string]string{"summary": "核心账务节点 " + instance + " 失联"}}
	}
	body, err := json.Marshal(map[string]any{"version": "4", "status": status, "alerts": alerts})
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// stormIncident makes an Alertmanager integration called name whose route groups
// alerts by alertname and cluster, and posts n NodeDown alerts to it: one incident.
func (c *console) stormIncident(name string, n int) *inbound.Integration {
	c.t.Helper()
	ctx := context.Background()
	if err := alert.Of(c.store).CreatePolicy(ctx, &alert.EscalationPolicy{Name: name + "-policy",
		Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}}); err != nil {
		c.t.Fatal(err)
	}
	svc := c.h.Dispatch.Inbound()
	it, _, err := svc.CreateIntegration(ctx, audit.Actor{Name: adminUser, Type: audit.ActorUser}, inbound.IntegrationInput{Name: name,
		Format: inbound.FormatAlertmanager, DefaultRoute: &inbound.Route{Policy: name + "-policy", Platform: "sandbox",
			Rules: incident.Rules{GroupBy: []string{"alertname", "cluster"}, StormThreshold: 5}}})
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := svc.Receive(ctx, it, []byte(nodeDownBody(c.t, "firing", n))); err != nil {
		c.t.Fatal(err)
	}
	return it
}

// TestIncidentsAPIAndPage posts a NodeDown storm to an integration's push URL whose
// route groups by alertname and cluster, then reads the one incident through the API
// (list, filter, one with its alerts; an unknown state 422), takes it through the API
// (who must be named), and reads the 事件 page in Chinese. Every answer is checked
// against docs/openapi.json.
func TestIncidentsAPIAndPage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	_, secret, err := c.store.Access().CreateAPIKey(ctx, "ops", access.ScopeAdmin, adminUser)
	if err != nil {
		t.Fatal(err)
	}
	api := c.as("")
	call := func(method, path, body string, header map[string]string) (int, map[string]any, string) {
		t.Helper()
		resp, raw := api.do(method, path, "application/json", strings.NewReader(body), header)
		out := map[string]any{}
		_ = json.Unmarshal([]byte(raw), &out)
		return resp.StatusCode, out, raw
	}
	admin := map[string]string{"Authorization": "Bearer " + secret}
	call("POST", "/api/v1/escalation-policies", `{"name":"core","steps":[{"targets":["E2001"],"wait":"10m"}]}`, admin)
	status, out, raw := call("POST", "/api/v1/integrations", `{"name":"prom","format":"alertmanager",
		"default_route":{"policy":"core","platform":"sandbox","group_by":["alertname","cluster"],"group_window":"5m","storm_threshold":5}}`, admin)
	token, _ := out["token"].(string)
	if status != http.StatusCreated || token == "" {
		t.Fatalf("create: %d %s", status, raw)
	}
	if status, out, raw := call("POST", "/api/v1/integrations", `{"name":"bad","format":"alertmanager",
		"default_route":{"policy":"core","platform":"sandbox","group_by":["alertname"],"group_window":"48h"}}`, admin); status != http.StatusUnprocessableEntity ||
		out["error"].(map[string]any)["field"] != "default_route.group_window" {
		t.Errorf("a window of two days: %d %s", status, raw)
	}
	if status, _, raw := call("POST", "/api/v1/inbound/prom", nodeDownBody(t, "firing", 8), map[string]string{"Authorization": "Bearer " + token}); status != http.StatusOK {
		t.Fatalf("the storm: %d %s", status, raw)
	}
	status, out, raw = call("GET", "/api/v1/incidents?state=open", "", admin)
	list, _ := out["incidents"].([]any)
	if status != http.StatusOK || len(list) != 1 || out["next_cursor"] != "" {
		t.Fatalf("incidents: %d %s", status, raw)
	}
	in := list[0].(map[string]any)
	if in["alert_count"] != float64(8) || in["group_key"] != "alertname=NodeDown,cluster=sh-core" || in["storm_at"] == nil {
		t.Errorf("the incident: %s", raw)
	}
	id := int64(in["id"].(float64))
	if status, _, _ := call("GET", "/api/v1/incidents?state=nonsense", "", admin); status != http.StatusUnprocessableEntity {
		t.Errorf("an unknown state: %d, want 422", status)
	}
	status, out, raw = call("GET", fmt.Sprintf("/api/v1/incidents/%d", id), "", admin)
	if alerts, _ := out["alerts"].([]any); status != http.StatusOK || len(alerts) != 8 || alerts[0].(map[string]any)["incident_id"] != float64(id) {
		t.Fatalf("one incident: %d %s", status, raw)
	}
	if status, _, _ := call("GET", "/api/v1/incidents/999999", "", admin); status != http.StatusNotFound {
		t.Errorf("no such incident: %d, want 404", status)
	}
	if status, out, raw := call("POST", fmt.Sprintf("/api/v1/incidents/%d/ack", id), `{}`, admin); status != http.StatusUnprocessableEntity ||
		out["error"].(map[string]any)["field"] != "by" {
		t.Errorf("taking it without saying who: %d %s", status, raw)
	}
	page := c.as(viewerUser)
	resp, body := page.do("GET", "/incidents", "", nil, map[string]string{"Accept-Language": "zh-CN"})
	wantStatus(t, "incidents page", resp, body, http.StatusOK)
	wantContains(t, "incidents page", body, "<details", fmt.Sprintf(`id="incident-%d"`, id), "alertname=NodeDown,cluster=sh-core", "8 条告警", "告警风暴", "未接手")
	if strings.Contains(body, "接手事件") {
		t.Error("a viewer is offered to take the incident")
	}
	// The alert that opened the incident links to its batch; one that joined it was sent
	// nothing of its own and says so, without a link that would lead to no batch.
	lead, joined := testenv.Count(t, c.store, "SELECT MIN(id) FROM alerts WHERE incident_id = ?", id),
		testenv.Count(t, c.store, "SELECT MAX(id) FROM alerts WHERE incident_id = ?", id)
	resp, body = page.do("GET", fmt.Sprintf("/alerts/%d", lead), "", nil, map[string]string{"Accept-Language": "zh-CN"})
	wantStatus(t, "the leading alert's page", resp, body, http.StatusOK)
	if !strings.Contains(body, `<dd id="alert-batch"><a href="/batches/`) {
		t.Error("the alert that opened the incident does not link to its batch")
	}
	resp, body = page.do("GET", fmt.Sprintf("/alerts/%d", joined), "", nil, map[string]string{"Accept-Language": "zh-CN"})
	wantStatus(t, "a joined alert's page", resp, body, http.StatusOK)
	if !strings.Contains(body, "已并入事件") || strings.Contains(body, `<dd id="alert-batch"><a`) {
		t.Error("a joined alert's page links to a batch it has not, or does not say why it has none")
	}
	status, out, raw = call("POST", fmt.Sprintf("/api/v1/incidents/%d/ack", id), `{"by":"E2001","note":"机房断电"}`, admin)
	if status != http.StatusOK || out["incident"].(map[string]any)["state"] != "acknowledged" || out["already"] != false {
		t.Fatalf("take it: %d %s", status, raw)
	}
	if n := testenv.Count(t, c.store, "SELECT COUNT(*) FROM alerts WHERE incident_id = ? AND state = 'acknowledged' AND acknowledged_by = 'E2001'", id); n != 8 {
		t.Errorf("%d of 8 alerts taken by E2001", n)
	}
	if status, out, _ := call("POST", fmt.Sprintf("/api/v1/incidents/%d/ack", id), `{"by":"E2001"}`, admin); status != http.StatusOK || out["already"] != true {
		t.Errorf("taking it again: %d %v", status, out)
	}

	// The console's integration form shows the route's noise settings and saves them;
	// a count that is not a number and a window out of range are refused beside their
	// fields, nothing saved.
	console := c.as(adminUser)
	_, body = console.get("/integrations/prom/edit")
	wantContains(t, "the edit form", body, `name="default_route.group_by" value="alertname, cluster"`,
		`name="default_route.storm_threshold" value="5"`)
	form := integrationForm("prom", "alertmanager")
	for k, v := range map[string]string{"policy": "core", "platform": "sandbox", "priority": "high",
		"group_by": "alertname, cluster", "group_window": "10m", "storm_threshold": "20", "max_notices_per_hour": "6"} {
		form.Set("default_route."+k, v)
	}
	for _, bad := range []struct{ field, value string }{{"storm_threshold", "many"}, {"group_window", "2s"}} {
		refused := url.Values{}
		for k, v := range form {
			refused[k] = v
		}
		refused.Set("default_route."+bad.field, bad.value)
		resp, body = console.post("/integrations/prom/edit", refused)
		wantStatus(t, "a bad "+bad.field, resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "a bad "+bad.field, body, `id="error-default_route.`+bad.field+`"`)
	}
	resp, body = console.post("/integrations/prom/edit", form)
	wantRedirect(t, "edit", resp, body, "/integrations/prom")
	it, err := c.h.Dispatch.Inbound().Integration(ctx, "prom")
	if err != nil || it.DefaultRoute == nil || it.DefaultRoute.Priority != "high" || it.DefaultRoute.StormThreshold != 20 ||
		strings.Join(it.DefaultRoute.GroupBy, ",") != "alertname,cluster" || it.DefaultRoute.GroupWindow != "10m" ||
		it.DefaultRoute.MaxNoticesPerHour != 6 {
		t.Errorf("after editing in the console: %+v, %v", it.DefaultRoute, err)
	}
}

// checkIncidentTaken takes the console's one incident (stormIncident's) on the 事件
// page: the incident and every alert of it are taken, and the page says so.
func checkIncidentTaken(t *testing.T, ctx context.Context, c *console) {
	t.Helper()
	q := chromedp.ByQuery
	var notice string
	if err := chromedp.Run(ctx,
		chromedp.EmulateViewport(390, 900),
		chromedp.Navigate(c.url+"/incidents"),
		chromedp.WaitVisible(`details.incident button.incident-ack`, q),
		chromedp.Click(`details.incident button.incident-ack`, q),
		chromedp.WaitVisible(`main .alert`, q),
		chromedp.Text(`main .alert`, &notice, q),
	); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(notice, "已接手") {
		t.Errorf("the notice reads %q", notice)
	}
	var alerts, taken int
	if err := c.store.SQL().QueryRow(`SELECT COUNT(*), SUM(CASE WHEN state = 'acknowledged' AND acknowledged_via = 'console' THEN 1 ELSE 0 END)
		FROM alerts WHERE incident_id IS NOT NULL`).Scan(&alerts, &taken); err != nil || alerts == 0 || taken != alerts {
		t.Errorf("%d of %d alerts of the incident taken (%v)", taken, alerts, err)
	}
	if n := testenv.Count(t, c.store, "SELECT COUNT(*) FROM incidents WHERE state = 'acknowledged'"); n != 1 {
		t.Error("the incident is not taken")
	}
}
