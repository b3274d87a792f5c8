package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"herald/access"
	"herald/alert"
)

// TestIntegrationsAPI makes an integration through the API (its token in that answer
// only), posts events to its push URL with the token in the header and in the query,
// and reads what came in; a wrong token is 401 and records nothing, a body over 1 MB
// 413, a body without its dedup key 422 naming the field. Every answer is checked
// against docs/openapi.json.
func TestIntegrationsAPI(t *testing.T) {
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
	if status, _, raw := call("POST", "/api/v1/escalation-policies", `{"name":"night","steps":[{"targets":["E2001"],"wait":"10m"}]}`, admin); status != http.StatusCreated {
		t.Fatalf("policy: %d %s", status, raw)
	}
	status, out, raw := call("POST", "/api/v1/integrations", `{"name":"prom","format":"events","notify_on_resolve":true,
		"routes":[{"matchers":[{"name":"label:team","value":"core"}],"policy":"night","platform":"sandbox","recipients":["E1001"]}]}`, admin)
	token, _ := out["token"].(string)
	if status != http.StatusCreated || token == "" || out["push_url"] != "https://herald.example/api/v1/inbound/prom" {
		t.Fatalf("create: %d %s", status, raw)
	}
	if status, out, raw := call("POST", "/api/v1/integrations", `{"name":"bad","format":"events","routes":[{"policy":"nope","platform":"sandbox"}]}`, admin); status != http.StatusUnprocessableEntity ||
		out["error"].(map[string]any)["field"] != "routes[0].policy" {
		t.Errorf("an unknown policy: %d %s", status, raw)
	}
	if _, _, raw := call("GET", "/api/v1/integrations/prom", "", admin); strings.Contains(raw, token) || strings.Contains(raw, `"token"`) {
		t.Errorf("reading the integration shows its token: %s", raw)
	}
	firing := `{"event_action":"trigger","dedup_key":"node1::cpu","severity":"critical","title":"CPU 过高","labels":{"team":"core"}}`
	if status, _, _ := call("POST", "/api/v1/inbound/prom", firing, map[string]string{"Authorization": "Bearer wrong"}); status != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", status)
	}
	if status, _, _ := call("POST", "/api/v1/inbound/nosuch", firing, map[string]string{"Authorization": "Bearer " + token}); status != http.StatusUnauthorized {
		t.Errorf("another integration's name: %d, want 401", status)
	}
	status, out, raw = call("POST", "/api/v1/inbound/prom", firing, map[string]string{"Authorization": "Bearer " + token})
	events, _ := out["events"].([]any)
	if status != http.StatusOK || len(events) != 1 || events[0].(map[string]any)["outcome"] != "created" {
		t.Fatalf("first event: %d %s", status, raw)
	}
	status, out, raw = call("POST", "/api/v1/inbound/prom?token="+token, firing, nil)
	if events, _ := out["events"].([]any); status != http.StatusOK || len(events) != 1 || events[0].(map[string]any)["outcome"] != "deduplicated" {
		t.Fatalf("the duplicate, token in the query: %d %s", status, raw)
	}
	status, out, raw = call("POST", "/api/v1/inbound/prom", `{"event_action":"trigger","severity":"critical","title":"x"}`, map[string]string{"Authorization": "Bearer " + token})
	if status != http.StatusUnprocessableEntity || out["error"].(map[string]any)["field"] != "dedup_key" {
		t.Errorf("a body without its dedup key: %d %s", status, raw)
	}
	huge := `{"event_action":"trigger","dedup_key":"k","title":"` + strings.Repeat("x", 1<<20) + `"}`
	if status, _, _ := call("POST", "/api/v1/inbound/prom", huge, map[string]string{"Authorization": "Bearer " + token}); status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over 1 MB: %d, want 413", status)
	}
	status, _, raw = call("GET", "/api/v1/integrations/prom/events", "", admin)
	var list []map[string]any
	if err := json.Unmarshal([]byte(raw), &list); status != http.StatusOK || err != nil || len(list) != 3 || list[0]["outcome"] != "refused" {
		t.Fatalf("what came in: %d %s", status, raw)
	}
	if strings.Contains(raw, token) {
		t.Errorf("what came in shows the token")
	}
	alerts, err := alert.Of(c.store).Alerts(ctx, alert.AlertFilter{}, 10)
	if err != nil || len(alerts) != 1 || alerts[0].Source != "prom" || alerts[0].EventCount != 2 {
		t.Fatalf("alerts %+v, %v", alerts, err)
	}
	status, out, raw = call("GET", "/api/v1/alerts/"+strconv.FormatInt(alerts[0].ID, 10), "", admin)
	if status != http.StatusOK || out["source"] != "prom" || out["dedup_key"] != "node1::cpu" || out["event_count"] != float64(2) ||
		out["labels"].(map[string]any)["team"] != "core" {
		t.Errorf("the alert through the API: %d %s", status, raw)
	}
	for query, want := range map[string]int{"source=prom": 1, "label=team=core": 1, "label=team=other": 0, "severity=warning": 0,
		"dedup_key=node1::cpu&severity=critical": 1} {
		status, out, raw := call("GET", "/api/v1/alerts?"+query, "", admin)
		if list, _ := out["alerts"].([]any); status != http.StatusOK || len(list) != want {
			t.Errorf("alerts?%s: %d %s, want %d", query, status, raw, want)
		}
	}
	if status, out, raw := call("GET", "/api/v1/alerts?label=team", "", admin); status != http.StatusUnprocessableEntity || out["error"].(map[string]any)["field"] != "label" {
		t.Errorf("a label filter without its value: %d %s", status, raw)
	}
	if status, _, _ := call("DELETE", "/api/v1/integrations/prom", "", admin); status != http.StatusNoContent {
		t.Errorf("delete: %d", status)
	}
	if status, _, _ := call("POST", "/api/v1/inbound/prom", firing, map[string]string{"Authorization": "Bearer " + token}); status != http.StatusUnauthorized {
		t.Errorf("a deleted integration's token: %d, want 401", status)
	}
}

// TestHeartbeatsAPI makes a heartbeat (its token in that answer only), pings it with GET
// and the token in the query as a cron line would, refuses a wrong token, edits it (its
// name and token stay), gives it a new token (the old one refused at once), and deletes
// it; every answer is checked against docs/openapi.json.
func TestHeartbeatsAPI(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	_, secret, err := c.store.Access().CreateAPIKey(ctx, "ops", access.ScopeAdmin, adminUser)
	if err != nil {
		t.Fatal(err)
	}
	api := c.as("")
	admin := map[string]string{"Authorization": "Bearer " + secret}
	call := func(method, path, body string, header map[string]string) (int, map[string]any, string) {
		t.Helper()
		resp, raw := api.do(method, path, "application/json", strings.NewReader(body), header)
		out := map[string]any{}
		_ = json.Unmarshal([]byte(raw), &out)
		return resp.StatusCode, out, raw
	}
	if status, _, raw := call("POST", "/api/v1/escalation-policies", `{"name":"night","steps":[{"targets":["E2001"],"wait":"10m"}]}`, admin); status != http.StatusCreated {
		t.Fatalf("policy: %d %s", status, raw)
	}
	if status, out, raw := call("POST", "/api/v1/heartbeats", `{"name":"eod","interval":"10s","route":{"policy":"night","platform":"sandbox"}}`, admin); status != http.StatusUnprocessableEntity ||
		out["error"].(map[string]any)["field"] != "interval" {
		t.Errorf("an interval under a minute: %d %s", status, raw)
	}
	status, out, raw := call("POST", "/api/v1/heartbeats", `{"name":"eod","interval":"24h","grace":"10m","days":"workdays","route":{"policy":"night","platform":"sandbox"}}`, admin)
	token, _ := out["token"].(string)
	if status != http.StatusCreated || token == "" || out["ping_url"] != "https://herald.example/api/v1/heartbeats/eod/ping" {
		t.Fatalf("create: %d %s", status, raw)
	}
	if status, _, _ := call("GET", "/api/v1/heartbeats/eod/ping?token=wrong", "", nil); status != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", status)
	}
	status, out, raw = call("GET", "/api/v1/heartbeats/eod/ping?token="+token, "", nil)
	if status != http.StatusOK || out["last_ping_at"] == nil {
		t.Fatalf("ping: %d %s", status, raw)
	}
	if _, _, raw := call("GET", "/api/v1/heartbeats", "", admin); strings.Contains(raw, token) {
		t.Errorf("the list shows the token")
	}
	// An edit: every day now, every 12 hours; the name and token stay.
	status, out, raw = call("PUT", "/api/v1/heartbeats/eod", `{"name":"other","interval":"12h","grace":"5m","route":{"policy":"night","platform":"sandbox","priority":"high"}}`, admin)
	if status != http.StatusOK || out["name"] != "eod" || out["interval"] != "12h0m0s" || out["days"] != "" || out["token"] != nil ||
		out["route"].(map[string]any)["priority"] != "high" {
		t.Fatalf("edit: %d %s", status, raw)
	}
	if status, out, raw := call("PUT", "/api/v1/heartbeats/eod", `{"interval":"12h","days":"weekends","route":{"policy":"night","platform":"sandbox"}}`, admin); status != http.StatusUnprocessableEntity ||
		out["error"].(map[string]any)["field"] != "days" {
		t.Errorf("an edit with unknown days: %d %s", status, raw)
	}
	if status, _, raw := call("PUT", "/api/v1/heartbeats/nosuch", `{"interval":"12h","route":{"policy":"night","platform":"sandbox"}}`, admin); status != http.StatusNotFound {
		t.Errorf("an edit of no heartbeat: %d %s", status, raw)
	}
	status, out, raw = call("POST", "/api/v1/heartbeats/eod/token", "", admin)
	fresh, _ := out["token"].(string)
	if status != http.StatusOK || fresh == "" || fresh == token || out["ping_url"] != "https://herald.example/api/v1/heartbeats/eod/ping" {
		t.Fatalf("new token: %d %s", status, raw)
	}
	if status, _, _ := call("GET", "/api/v1/heartbeats/eod/ping?token="+token, "", nil); status != http.StatusUnauthorized {
		t.Errorf("the old token after a new one: %d, want 401", status)
	}
	if status, _, raw := call("POST", "/api/v1/heartbeats/eod/ping", "", map[string]string{"Authorization": "Bearer " + fresh}); status != http.StatusOK {
		t.Errorf("the new token: %d %s", status, raw)
	}
	if status, _, _ := call("POST", "/api/v1/heartbeats/nosuch/token", "", admin); status != http.StatusNotFound {
		t.Errorf("a new token for no heartbeat: %d, want 404", status)
	}
	if status, _, _ := call("DELETE", "/api/v1/heartbeats/eod", "", admin); status != http.StatusNoContent {
		t.Errorf("delete: %d", status)
	}
}
