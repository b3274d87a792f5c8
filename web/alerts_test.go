package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/access"
	"herald/alert"
	"herald/audit"
	"herald/dispatch"
	"herald/duty"
	"herald/kernel"
	"herald/models"
)

// TestAlertsAPI creates a policy, opens an alert through POST /api/v1/messages, reads it
// and acknowledges it twice; bad input answers 422 naming the field. Every answer is
// checked against docs/openapi.json.
func TestAlertsAPI(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	_, secret, err := c.store.Access().CreateAPIKey(ctx, "alerts", access.ScopeAdmin, adminUser)
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
		{`{"name":"p","steps":[{"targets":["on_duty"],"wait":"10m"}],"repeat":-1}`, "repeat"},
		{`{"name":"p","steps":[{"targets":["on_duty"],"wait":"soon"}]}`, "steps[0].wait"},
		{`{"name":"p","steps":[{"targets":["on_duty"],"wait":"29s"}]}`, "steps[0].wait"},
		{`{"name":"p","steps":[{"targets":["rotation:nosuch+1"],"wait":"10m"}]}`, "steps[0].targets[0]"},
		{`{"name":"p","steps":[{"targets":[],"wait":"10m"}]}`, "steps[0].targets"},
		{`{"name":"p","steps":[]}`, "steps"},
		{`{"name":"","steps":[{"targets":["on_duty"],"wait":"10m"}]}`, "name"},
		{`{"name":"p","steps":[{"targets":["on_duty"],"wait":"10m"},{"targets":["on_duty"],"wait":"10m"},{"targets":["on_duty"],"wait":"10m","via":"nosuch"}]}`, "steps[2].via"},
		{`{"name":"p","steps":[{"targets":["on_duty"],"wait":"10m","via":"voice"}]}`, "steps[0].via"},
		{`{"name":"p","steps":[{"targets":["on_duty"],"wait":"10m","advance_on_no_answer":true}]}`, "steps[0].advance_on_no_answer"},
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
	for _, ack := range []string{`{"policy":"nosuch"}`, `{"policy":""}`, `{}`} {
		if status, out := call("POST", "/api/v1/messages", `{"platform":"sandbox","content":{"text":"down"},"ack":`+ack+`}`); status != http.StatusUnprocessableEntity || field(out) != "ack.policy" {
			t.Errorf("ack %s: %d %v, want 422 naming ack.policy", ack, status, out)
		}
	}
	if n, err := alert.Of(c.store).Alerts(ctx, alert.AlertFilter{}, 10); err != nil || len(n) != 0 {
		t.Fatalf("refused sends left alerts behind: %v %v", n, err)
	}
	status, out := call("POST", "/api/v1/messages", `{"platform":"sandbox","content":{"text":"核心系统宕机"},"ack":{"policy":"core"}}`)
	if status != http.StatusAccepted || out["alert_id"] == nil {
		t.Fatalf("send with ack: %d %v", status, out)
	}
	id := int64(out["alert_id"].(float64))
	status, got := call("GET", fmt.Sprintf("/api/v1/alerts/%d", id), "")
	steps, _ := got["steps"].([]any)
	if status != http.StatusOK || got["state"] != "open" || len(steps) != 2 {
		t.Fatalf("alert: %d %v", status, got)
	}
	if first := steps[0].(map[string]any); fmt.Sprint(first["targets"]) != "[E2001]" || first["fired_at"] == nil {
		t.Errorf("step 1 (nobody named: called at once): %v", first)
	}
	// Editing the policy changes no alert in flight.
	if status, _ := call("PUT", "/api/v1/escalation-policies/core", `{"name":"core","steps":[{"targets":["E1001"],"wait":"1h"}]}`); status != http.StatusOK {
		t.Fatalf("update policy: %d", status)
	}
	if a, err := alert.Of(c.store).AlertByID(ctx, id); err != nil || len(a.PolicyCopy.Steps) != 2 || a.PolicyCopy.Steps[0].Targets[0] != "E2001" {
		t.Errorf("the alert's copy changed with the policy: %+v %v", a, err)
	}
	for _, body := range []string{`{"by":"E9999"}`, `{"by":""}`, `{}`, `{"by":"E2001","note":"` + strings.Repeat("x", 1001) + `"}`} {
		want := "by"
		if strings.Contains(body, "note") {
			want = "note"
		}
		if status, out := call("POST", fmt.Sprintf("/api/v1/alerts/%d/ack", id), body); status != http.StatusUnprocessableEntity || field(out) != want {
			t.Errorf("ack %.40s: %d %v, want 422 naming %s", body, status, out, want)
		}
	}
	if a, err := alert.Of(c.store).AlertByID(ctx, id); err != nil || a.State != alert.AlertOpen {
		t.Fatalf("refused acknowledgments moved the alert: %+v %v", a, err)
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
	form := url.Values{"name": {"night"}, "step.0.target": {"on_duty"}, "step.0.wait": {"10m"},
		"step.1.target": {"rotation:nosuch+1", "E1001"}, "step.1.wait": {"15m"}, "repeat": {"1"}, "notify_on_ack": {"1"}}
	resp, body := admin.post("/escalation-policies", form)
	wantStatus(t, "bad policy", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "steps[1]", "nosuch")
	wantContains(t, "bad policy keeps what was picked", body, `data-picked="rotation:nosuch+1"`, `data-picked="E1001"`, "Li Wei (E1001)")
	form["step.1.target"] = []string{"E1001"}
	resp, body = admin.post("/escalation-policies", form)
	wantRedirect(t, "policy", resp, body, "/escalation-policies")
	resp, body = admin.get("/escalation-policies/night/edit")
	wantStatus(t, "edit form", resp, body, http.StatusOK)
	wantContains(t, "edit form", body, `name="step.1.target" value="E1001"`, `name="step.1.wait" value="15m"`)

	sandbox, err := c.store.Sending().AccountByName(context.Background(), models.SandboxAccountName)
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
	list, err := alert.Of(c.store).Alerts(context.Background(), alert.AlertFilter{State: alert.AlertOpen}, 10)
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
	got, err := alert.Of(c.store).AlertByID(context.Background(), a.ID)
	if err != nil || got.State != alert.AlertAcknowledged || got.AcknowledgedBy != operatorUser || got.AcknowledgedVia != "console" {
		t.Fatalf("after the console ack: %+v %v", got, err)
	}
	resp, body = op.get(fmt.Sprintf("/alerts/%d", a.ID))
	wantContains(t, "alert page", body, `<dd id="alert-state">acknowledged</dd>`, "otto")
	// Taking it again is harmless and says who was first.
	resp, body = admin.post(fmt.Sprintf("/alerts/%d/ack", a.ID), url.Values{"note": {""}})
	wantRedirect(t, "second ack", resp, body, fmt.Sprintf("/alerts/%d", a.ID))
	resp, body = admin.get(fmt.Sprintf("/alerts/%d", a.ID))
	wantContains(t, "second ack", body, fmt.Sprintf("Alert #%d was already taken by %s; nothing changed.", a.ID, operatorUser))
	if got := c.alert(a.ID); got.AcknowledgedBy != operatorUser {
		t.Errorf("the second ack moved the acknowledgment to %q", got.AcknowledgedBy)
	}
	resp, body = op.post(fmt.Sprintf("/alerts/%d/resolve", a.ID), url.Values{"note": {""}})
	wantRedirect(t, "resolve", resp, body, fmt.Sprintf("/alerts/%d", a.ID))
	resp, body = admin.post(fmt.Sprintf("/alerts/%d/resolve", a.ID), url.Values{"note": {""}})
	wantRedirect(t, "second resolve", resp, body, fmt.Sprintf("/alerts/%d", a.ID))
	resp, body = admin.get(fmt.Sprintf("/alerts/%d", a.ID))
	wantContains(t, "second resolve", body, fmt.Sprintf("Alert #%d was already resolved by %s; nothing changed.", a.ID, operatorUser))
	resp, body = op.post(fmt.Sprintf("/alerts/%d/ack", a.ID), url.Values{"note": {strings.Repeat("x", 1001)}})
	wantStatus(t, "long note", resp, body, http.StatusUnprocessableEntity)
	resp, body = admin.post("/escalation-policies/night/delete", nil)
	wantRedirect(t, "delete policy", resp, body, "/escalation-policies")
}

// TestAlertsAPIScope: a key without the admin scope reaches only the alerts of batches
// it created — another key's alert is 404 to read, acknowledge or resolve, and missing
// from the list, as another key's message is — while an admin key reaches any.
func TestAlertsAPIScope(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	keys := map[string]string{}
	for name, scopes := range map[string]string{"crm": "send,read", "erp": "send,read", "ops": access.ScopeAdmin} {
		_, secret, err := c.store.Access().CreateAPIKey(ctx, name, scopes, adminUser)
		if err != nil {
			t.Fatal(err)
		}
		keys[name] = secret
	}
	api := c.as("")
	call := func(key, method, path, body string) (int, map[string]any) {
		t.Helper()
		resp, raw := api.do(method, path, "application/json", strings.NewReader(body), map[string]string{"Authorization": "Bearer " + keys[key]})
		out := map[string]any{}
		_ = json.Unmarshal([]byte(raw), &out)
		return resp.StatusCode, out
	}
	if status, _ := call("ops", "POST", "/api/v1/escalation-policies", `{"name":"scope","steps":[{"targets":["E2001"],"wait":"10m"}]}`); status != http.StatusCreated {
		t.Fatalf("create policy: %d", status)
	}
	open := func(key string) (alertID int64, messageID string) {
		t.Helper()
		status, out := call(key, "POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2002"],"content":{"text":"核心系统告警"},"ack":{"policy":"scope"}}`)
		if status != http.StatusAccepted || out["alert_id"] == nil {
			t.Fatalf("send with ack through %s: %d %v", key, status, out)
		}
		return int64(out["alert_id"].(float64)), out["messages"].([]any)[0].(map[string]any)["id"].(string)
	}
	crmAlert, crmMessage := open("crm")
	erpAlert, _ := open("erp")
	listed := func(key string) []int64 {
		t.Helper()
		status, out := call(key, "GET", "/api/v1/alerts", "")
		if status != http.StatusOK {
			t.Fatalf("list through %s: %d %v", key, status, out)
		}
		var ids []int64
		for _, a := range out["alerts"].([]any) {
			ids = append(ids, int64(a.(map[string]any)["id"].(float64)))
		}
		slices.Sort(ids)
		return ids
	}
	for key, want := range map[string][]int64{"crm": {crmAlert}, "erp": {erpAlert}, "ops": {crmAlert, erpAlert}} {
		if diff := cmp.Diff(want, listed(key)); diff != "" {
			t.Errorf("alerts listed through %s (-want +got):\n%s", key, diff)
		}
	}
	// The message API's rule, for comparison: another key's message is not found.
	if status, _ := call("erp", "GET", "/api/v1/messages/"+crmMessage, ""); status != http.StatusNotFound {
		t.Fatalf("another key's message: %d, want 404 (the rule alerts follow)", status)
	}
	for _, tc := range []struct{ method, path, body string }{
		{"GET", fmt.Sprintf("/api/v1/alerts/%d", crmAlert), ""},
		{"POST", fmt.Sprintf("/api/v1/alerts/%d/ack", crmAlert), `{"by":"E2002"}`},
		{"POST", fmt.Sprintf("/api/v1/alerts/%d/resolve", crmAlert), `{"by":"E2002"}`},
		{"POST", fmt.Sprintf("/api/v1/alerts/%d/ack", crmAlert), `{"by":"E9999"}`}, // not even the field is checked
	} {
		status, out := call("erp", tc.method, tc.path, tc.body)
		if e, _ := out["error"].(map[string]any); status != http.StatusNotFound || e["code"] != "not_found" {
			t.Errorf("erp %s %s: %d %v, want 404 not_found", tc.method, tc.path, status, out)
		}
	}
	if a := c.alert(crmAlert); a.State != alert.AlertOpen {
		t.Fatalf("another key's requests moved the alert to %s", a.State)
	}
	if status, out := call("crm", "GET", fmt.Sprintf("/api/v1/alerts/%d", crmAlert), ""); status != http.StatusOK || out["state"] != "open" {
		t.Errorf("crm reads its own alert: %d %v", status, out)
	}
	if status, out := call("crm", "POST", fmt.Sprintf("/api/v1/alerts/%d/ack", crmAlert), `{"by":"E2002"}`); status != http.StatusOK || out["already"] != false {
		t.Errorf("crm acknowledges its own alert: %d %v", status, out)
	}
	if status, out := call("ops", "POST", fmt.Sprintf("/api/v1/alerts/%d/resolve", erpAlert), `{"by":"E2002"}`); status != http.StatusOK {
		t.Errorf("an admin key resolves another key's alert: %d %v", status, out)
	}
}

// TestAlertThatNobodyAnswered: once an alert is exhausted, acknowledging it changes
// nothing, through the API (409 alert_ended), the console (409) and the link (409).
func TestAlertThatNobodyAnswered(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	d := c.h.Dispatch
	a, msgs := c.ackAlert("E2001")
	for _, after := range []time.Duration{10*time.Minute + time.Second, 20*time.Minute + 2*time.Second} {
		c.clockOffset.Store(int64(after))
		if _, err := d.Alerts().FireDueAlertSteps(ctx, kernel.Now().Add(time.Duration(c.clockOffset.Load()))); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.alert(a.ID); got.State != alert.AlertExhausted {
		t.Fatalf("alert is %s after every step, want exhausted", got.State)
	}
	_, secret, err := c.store.Access().CreateAPIKey(ctx, "ended", "send,read", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := c.as("").do("POST", fmt.Sprintf("/api/v1/alerts/%d/ack", a.ID), "application/json", strings.NewReader(`{"by":"E2001"}`),
		map[string]string{"Authorization": "Bearer " + secret})
	wantStatus(t, "API ack", resp, body, http.StatusNotFound) // a send key reaches its own alerts only
	_, secret, err = c.store.Access().CreateAPIKey(ctx, "ended-admin", access.ScopeAdmin, adminUser)
	if err != nil {
		t.Fatal(err)
	}
	resp, body = c.as("").do("POST", fmt.Sprintf("/api/v1/alerts/%d/ack", a.ID), "application/json", strings.NewReader(`{"by":"E2001"}`),
		map[string]string{"Authorization": "Bearer " + secret})
	wantStatus(t, "API ack", resp, body, http.StatusConflict)
	wantContains(t, "API ack", body, `"code":"alert_ended"`)
	resp, body = c.as(operatorUser).post(fmt.Sprintf("/alerts/%d/ack", a.ID), nil)
	wantStatus(t, "console ack", resp, body, http.StatusConflict)
	wantContains(t, "console ack", body, "Nobody acknowledged this alert in time")
	resp, body = c.as("").post(c.ackPath(msgs["E2001"]), url.Values{"action": {"ack"}})
	wantStatus(t, "link tap", resp, body, http.StatusConflict)
	wantContains(t, "link tap", body, "This alert is over: nothing was changed.")
	if got := c.alert(a.ID); got.State != alert.AlertExhausted || got.AcknowledgedBy != "" {
		t.Errorf("an ended alert changed: %+v", got)
	}
}

// TestAlertPagesSayWhatWaits: the alert page warns of a step that called nobody (a day
// off with nobody on duty: the next step was called at once), the dashboard counts the
// open alerts, and an alert whose batch awaits approval says nobody is called until it
// is approved.
func TestAlertPagesSayWhatWaits(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	d := c.h.Dispatch
	if err := c.store.Duty().SetHoliday(ctx, &duty.Holiday{Date: c.today(0), Kind: duty.HolidayOff, Name: "国庆"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Alerts().CreatePolicy(ctx, audit.System("test"), alert.EscalationPolicy{Name: "night", Steps: []alert.PolicyStep{
		{Targets: []string{"on_duty"}, Wait: "10m"}, {Targets: []string{"E1001"}, Wait: "10m"}}}); err != nil {
		t.Fatal(err)
	}
	send := func(people ...string) *alert.Alert {
		t.Helper()
		// An alert whose first step finds nobody opens when a monitor raises it; asked
		// for through the API it would be refused.
		source := "api"
		if len(people) == 0 {
			source = dispatch.SourceInbound
		}
		res, err := d.Submit(ctx, dispatch.Request{Source: source, Actor: "test", Platform: "sandbox", Recipients: people,
			Text: "核心系统交易失败率 35%", Ack: &dispatch.AckRequest{Policy: "night"}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Alert
	}
	holiday := send()
	op := c.as(operatorUser)
	resp, body := op.get(fmt.Sprintf("/alerts/%d", holiday.ID))
	wantStatus(t, "alert page", resp, body, http.StatusOK)
	wantContains(t, "alert page", body, "A step called nobody: a day off with nobody on duty. The next step was called at once.", "E1001")
	resp, body = op.get("/")
	wantContains(t, "dashboard", body, `id="open-alerts"`, "1 alerts awaiting acknowledgment")

	if err := d.SetApprovalThreshold(ctx, audit.System("test"), 1); err != nil {
		t.Fatal(err)
	}
	held := send("E2001", "E2002")
	resp, body = op.get(fmt.Sprintf("/alerts/%d", held.ID))
	wantContains(t, "alert awaiting approval", body, `id="alert-held"`, "waiting for its batch&#39;s approval")
	resp, body = c.as(viewerUser).getHX("/alerts/live")
	wantContains(t, "live list", body, fmt.Sprintf(`data-alert="%d"`, held.ID), "waiting for its batch&#39;s approval")
}
