package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"herald/models"
)

// TestAlertsAPI creates a policy, opens an alert through POST /api/v1/messages, reads it
// and acknowledges it twice; bad input answers 422 naming the field. Every answer is
// checked against docs/openapi.json.
func TestAlertsAPI(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	_, secret, err := c.store.CreateAPIKey(ctx, "alerts", models.ScopeAdmin, adminUser)
	if err != nil {
		t.Fatal(err)
	}
	api := c.as("")
	call := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		resp, raw := api.do(method, path, "application/json", strings.NewReader(body), map[string]string{"Authorization": "Bearer " + secret})
		out := map[string]any{}
		_ = json.Unmarshal([]byte(raw), &out)
		return resp.StatusCode, out
	}
	field := func(out map[string]any) string {
		e, _ := out["error"].(map[string]any)
		f, _ := e["field"].(string)
		return f
	}
	for _, tc := range []struct{ body, field string }{
		{`{"name":"p","steps":[{"targets":["rotation:nosuch"],"wait":"10m"}]}`, "steps[0].targets[0]"},
		{`{"name":"p","steps":[{"targets":["on_duty"],"wait":"10m"},{"targets":["on_duty","E9999"],"wait":"10m"}]}`, "steps[1].targets[1]"},
		{`{"name":"p","steps":[{"targets":["department:Nowhere"],"wait":"10m"}]}`, "steps[0].targets[0]"},
		{`{"name":"p","steps":[{"targets":["on_duty"],"wait":"10s"}]}`, "steps[0].wait"},
		{`{"name":"p","steps":[{"targets":["on_duty"],"wait":"25h"}]}`, "steps[0].wait"},
		{`{"name":"p","steps":[{"targets":["on_duty"],"wait":"10m"}],"repeat":6}`, "repeat"},
	} {
		if status, out := call("POST", "/api/v1/escalation-policies", tc.body); status != http.StatusUnprocessableEntity || field(out) != tc.field {
			t.Errorf("%s: %d %v, want 422 naming %s", tc.body, status, out, tc.field)
		}
	}
	status, _ := call("POST", "/api/v1/escalation-policies",
		`{"name":"core","steps":[{"targets":["E2001"],"wait":"10m"},{"targets":["department:Counter"],"wait":"15m"}],"repeat":1,"notify_on_ack":true}`)
	if status != http.StatusCreated {
		t.Fatalf("create policy: %d", status)
	}
	if status, out := call("POST", "/api/v1/messages", `{"platform":"sandbox","content":{"text":"down"},"ack":{"policy":"nosuch"}}`); status != http.StatusUnprocessableEntity || field(out) != "ack.policy" {
		t.Errorf("unknown policy: %d %v", status, out)
	}
	status, out := call("POST", "/api/v1/messages", `{"platform":"sandbox","content":{"text":"核心系统宕机"},"ack":{"policy":"core"}}`)
	if status != http.StatusAccepted || out["alert_id"] == nil {
		t.Fatalf("send with ack: %d %v", status, out)
	}
	id := int64(out["alert_id"].(float64))
	status, alert := call("GET", fmt.Sprintf("/api/v1/alerts/%d", id), "")
	steps, _ := alert["steps"].([]any)
	if status != http.StatusOK || alert["state"] != "open" || len(steps) != 2 {
		t.Fatalf("alert: %d %v", status, alert)
	}
	if first := steps[0].(map[string]any); fmt.Sprint(first["targets"]) != "[E2001]" || first["fired_at"] == nil {
		t.Errorf("step 1 (nobody named: called at once): %v", first)
	}
	// Editing the policy changes no alert in flight.
	if status, _ := call("PUT", "/api/v1/escalation-policies/core", `{"name":"core","steps":[{"targets":["E1001"],"wait":"1h"}]}`); status != http.StatusOK {
		t.Fatalf("update policy: %d", status)
	}
	if a, err := c.store.AlertByID(ctx, id); err != nil || len(a.PolicyCopy.Steps) != 2 || a.PolicyCopy.Steps[0].Targets[0] != "E2001" {
		t.Errorf("the alert's copy changed with the policy: %+v %v", a, err)
	}
	if status, out := call("POST", fmt.Sprintf("/api/v1/alerts/%d/ack", id), `{"by":"E9999"}`); status != http.StatusUnprocessableEntity || field(out) != "by" {
		t.Errorf("unknown person: %d %v", status, out)
	}
	status, out = call("POST", fmt.Sprintf("/api/v1/alerts/%d/ack", id), `{"by":"E2001","note":"on it"}`)
	if status != http.StatusOK || out["already"] != false {
		t.Fatalf("ack: %d %v", status, out)
	}
	status, out = call("POST", fmt.Sprintf("/api/v1/alerts/%d/ack", id), `{"by":"E2002"}`)
	if a, _ := out["alert"].(map[string]any); status != http.StatusOK || out["already"] != true || a["acknowledged_by"] != "E2001" {
		t.Fatalf("second ack: %d %v", status, out)
	}
	if status, out := call("GET", "/api/v1/alerts?state=open", ""); status != http.StatusOK || len(out["alerts"].([]any)) != 0 {
		t.Errorf("open alerts after the ack: %d %v", status, out)
	}
	if status, _ := call("GET", "/api/v1/alerts?state=nonsense", ""); status != http.StatusUnprocessableEntity {
		t.Errorf("bad state: %d", status)
	}
	status, out = call("POST", fmt.Sprintf("/api/v1/alerts/%d/resolve", id), `{"by":"E2001"}`)
	if a, _ := out["alert"].(map[string]any); status != http.StatusOK || a["state"] != "resolved" || a["resolved_by"] != "E2001" {
		t.Fatalf("resolve: %d %v", status, out)
	}
	if status, _ := call("GET", "/api/v1/alerts/999999", ""); status != http.StatusNotFound {
		t.Errorf("unknown alert: %d", status)
	}
	if status, _ := call("DELETE", "/api/v1/escalation-policies/core", ""); status != http.StatusNoContent {
		t.Errorf("delete policy: %d", status)
	}
	if e := c.lastAudit("alert.acknowledge"); e.TargetID != fmt.Sprint(id) || e.ParamMap()["by"] == "" || e.ParamMap()["via"] != "api" {
		t.Errorf("audit entry of the ack: %+v", e)
	}
}

// TestAlertConsole submits the policy form (a mistake shown beside the steps, what was
// typed kept), opens an alert and takes it from the 待确认 page.
func TestAlertConsole(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	admin := c.as(adminUser)
	form := url.Values{"name": {"night"}, "steps": {"on_duty | 10m\nrotation:nosuch+1 E1001 | 15m"}, "repeat": {"1"}, "notify_on_ack": {"1"}}
	resp, body := admin.post("/escalation-policies", form)
	wantStatus(t, "bad policy", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "steps", "2")
	wantContains(t, "bad policy keeps what was typed", body, "rotation:nosuch+1 E1001 | 15m")
	form.Set("steps", "on_duty | 10m\nE1001 | 15m")
	resp, body = admin.post("/escalation-policies", form)
	wantRedirect(t, "policy", resp, body, "/escalation-policies")
	resp, body = admin.get("/escalation-policies/night/edit")
	wantStatus(t, "edit form", resp, body, http.StatusOK)
	wantContains(t, "edit form", body, "E1001 | 15m")

	sandbox, err := c.store.AccountByName(context.Background(), models.SandboxAccountName)
	if err != nil {
		t.Fatal(err)
	}
	op := c.as(operatorUser)
	resp, body = op.get("/compose")
	wantContains(t, "compose offers the policy", body, `name="ack.policy"`, `value="night"`)
	resp, body = op.post("/compose", url.Values{"account": {fmt.Sprint(sandbox.ID)}, "recipient": {fmt.Sprint(c.recipient("E2001").ID)},
		"content.text": {"交易系统告警"}, "priority": {"normal"}, "ack.policy": {"night"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("compose with ack: %d\n%s", resp.StatusCode, body)
	}
	list, err := c.store.Alerts(context.Background(), models.AlertOpen, 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("open alerts %v %v", list, err)
	}
	a := list[0]
	resp, body = op.get("/alerts")
	wantContains(t, "alerts page", body, fmt.Sprintf(`data-alert="%d"`, a.ID), "交易系统告警", fmt.Sprintf(`action="/alerts/%d/ack"`, a.ID))
	resp, body = c.as(viewerUser).getHX("/alerts/live")
	wantContains(t, "live part", body, `id="alerts"`)
	wantNotContains(t, "viewers see no buttons", body, fmt.Sprintf(`action="/alerts/%d/ack"`, a.ID))
	resp, body = op.post(fmt.Sprintf("/alerts/%d/ack", a.ID), url.Values{"note": {"我来"}})
	wantRedirect(t, "ack", resp, body, fmt.Sprintf("/alerts/%d", a.ID))
	got, err := c.store.AlertByID(context.Background(), a.ID)
	if err != nil || got.State != models.AlertAcknowledged || got.AcknowledgedBy != operatorUser || got.AcknowledgedVia != "console" {
		t.Fatalf("after the console ack: %+v %v", got, err)
	}
	resp, body = op.get(fmt.Sprintf("/alerts/%d", a.ID))
	wantContains(t, "alert page", body, `<dd id="alert-state">acknowledged</dd>`, "otto")
	resp, body = op.post(fmt.Sprintf("/alerts/%d/resolve", a.ID), url.Values{"note": {""}})
	wantRedirect(t, "resolve", resp, body, fmt.Sprintf("/alerts/%d", a.ID))
	resp, body = admin.post("/escalation-policies/night/delete", nil)
	wantRedirect(t, "delete policy", resp, body, "/escalation-policies")
}
