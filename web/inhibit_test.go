package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/delivery"
	"herald/dispatch"
	"herald/inbound"
	"herald/inhibit"
)

// The inhibition rules' API (admin): bad input is 422 naming the field with nothing
// written; a rule is created, read, replaced, listed and deleted, each audited; a send
// key may not touch them.
func TestInhibitRulesAPI(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	admin, send := c.apiKey("test-admin", "admin"), c.apiKey("test-send", "send")
	rule := func(name, source, target, equal string) string {
		return fmt.Sprintf(`{"name":%q,"source":%s,"target":%s,"equal":%s}`, name, source, target, equal)
	}
	critical, warning := `[{"name":"severity","value":"critical"}]`, `[{"name":"severity","value":"warning"}]`
	for _, bad := range []struct{ body, field string }{
		{rule("self", critical, `[{"name":"severity","value":"critical"}]`, `["cluster"]`), "target"},
		{rule("no-equal", critical, warning, `[]`), "equal"},
		{rule("blank-equal", critical, warning, `[" "]`), "equal[0]"},
		{rule("host", `[{"name":"host","value":"db1"}]`, warning, `["cluster"]`), "source[0].name"},
		{rule("title", `[{"name":"title","value":"DB down"}]`, warning, `["cluster"]`), "source[0].name"},
		{rule("bad-regex", critical, `[{"name":"label:alertname","value":"(","regex":true}]`, `["cluster"]`), "target[0].value"},
		{rule("", critical, warning, `["cluster"]`), "name"},
		{rule("no-target", critical, `[]`, `["cluster"]`), "target"},
	} {
		if status, body, _ := admin.call("POST", "/api/v1/inhibit-rules", bad.body); status != http.StatusUnprocessableEntity || errorField(body) != bad.field {
			t.Errorf("%s: %d %s, want 422 naming %s", bad.body, status, body["_raw"], bad.field)
		}
	}
	if n := c.countRows("inhibit_rules"); n != 0 {
		t.Errorf("refused rules left %d rows", n)
	}
	if status, _, _ := send.call("GET", "/api/v1/inhibit-rules", ""); status != http.StatusForbidden {
		t.Errorf("a send key listing rules: %d, want 403", status)
	}
	status, created, _ := admin.call("POST", "/api/v1/inhibit-rules", rule("db-down", critical, warning, `["cluster"]`))
	if status != http.StatusCreated || created["name"] != "db-down" {
		t.Fatalf("create: %d %s", status, created["_raw"])
	}
	path := "/api/v1/inhibit-rules/" + strconv.FormatFloat(created["id"].(float64), 'f', 0, 64)
	status, updated, _ := admin.call("PUT", path, rule("db-down", critical, warning, `["cluster","dc"]`))
	if eq := updated["equal"].([]any); status != http.StatusOK || len(eq) != 2 {
		t.Errorf("update: %d %s", status, updated["_raw"])
	}
	if status, body, _ := admin.call("GET", path, ""); status != http.StatusOK || len(body["equal"].([]any)) != 2 {
		t.Errorf("get: %d %s", status, body["_raw"])
	}
	if _, body, _ := admin.call("GET", "/api/v1/inhibit-rules", ""); len(body["inhibit_rules"].([]any)) != 1 {
		t.Errorf("list: %s", body["_raw"])
	}
	if status, body, _ := admin.call("DELETE", path, ""); status != http.StatusNoContent {
		t.Errorf("delete: %d %s", status, body["_raw"])
	}
	if status, _, _ := admin.call("GET", path, ""); status != http.StatusNotFound {
		t.Errorf("get after delete: %d, want 404", status)
	}
	var audits int
	if err := c.store.SQL().QueryRow("SELECT COUNT(*) FROM audit_log WHERE action IN ('inhibit.create', 'inhibit.update', 'inhibit.delete')").Scan(&audits); err != nil || audits != 3 {
		t.Errorf("%d audit entries of rules (%v), want 3", audits, err)
	}
}

// A recurring silence through the API: a bad schedule is 422 naming its field; a good
// one lists its windows, by weekday here, crossing midnight.
func TestRecurringSilencesAPI(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	api := c.apiKey("test-send", "send")
	recurring := func(schedule string) string {
		return `{"matchers":[{"name":"department","value":"Counter"}],"schedule":` + schedule + `,"comment":"end-of-day batch"}`
	}
	for _, bad := range []struct{ schedule, field string }{
		{`{"days":"workdays","start":"23:30","end":"23:30","timezone":"Asia/Shanghai"}`, "schedule.end"},
		{`{"days":"mon,fun","start":"23:30","end":"02:00","timezone":"Asia/Shanghai"}`, "schedule.days"},
		{`{"days":"workdays","start":"25:00","end":"02:00","timezone":"Asia/Shanghai"}`, "schedule.start"},
		{`{"days":"workdays","start":"23:30","end":"2am","timezone":"Asia/Shanghai"}`, "schedule.end"},
		{`{"days":"workdays","start":"23:30","end":"02:00","timezone":"Mars/Olympus"}`, "schedule.timezone"},
	} {
		if status, body, _ := api.call("POST", "/api/v1/silences", recurring(bad.schedule)); status != http.StatusUnprocessableEntity || errorField(body) != bad.field {
			t.Errorf("%s: %d %s, want 422 naming %s", bad.schedule, status, body["_raw"], bad.field)
		}
	}
	if n := c.countRows("silences"); n != 0 {
		t.Errorf("refused silences left %d rows", n)
	}
	status, created, _ := api.call("POST", "/api/v1/silences", recurring(`{"days":"sat,sun","start":"22:00","end":"01:00","timezone":"Asia/Shanghai"}`))
	if status != http.StatusCreated || created["approval"] != "none" || created["schedule"].(map[string]any)["days"] != "sat,sun" {
		t.Fatalf("create: %d %s", status, created["_raw"])
	}
	path := "/api/v1/silences/" + strconv.FormatFloat(created["id"].(float64), 'f', 0, 64) + "/occurrences"
	// From noon on a Monday ahead, so no window is under way at either end.
	shanghai, _ := time.LoadLocation("Asia/Shanghai")
	from := time.Now().In(shanghai).Add(24 * time.Hour)
	from = time.Date(from.Year(), from.Month(), from.Day()+(8-int(from.Weekday()))%7, 12, 0, 0, 0, shanghai)
	status, body, _ := api.call("GET", path+"?from="+from.UTC().Format(time.RFC3339)+"&to="+from.Add(14*24*time.Hour).UTC().Format(time.RFC3339), "")
	list, _ := body["occurrences"].([]any)
	if status != http.StatusOK || len(list) != 4 {
		t.Fatalf("two weeks of weekends: %d %s, want 4 windows", status, body["_raw"])
	}
	for _, o := range list {
		w := o.(map[string]any)
		start, _ := time.Parse(time.RFC3339, w["starts_at"].(string))
		end, _ := time.Parse(time.RFC3339, w["ends_at"].(string))
		if wd := start.In(shanghai).Weekday(); (wd != time.Saturday && wd != time.Sunday) || start.In(shanghai).Hour() != 22 || end.Sub(start) != 3*time.Hour {
			t.Errorf("window %s – %s", start.In(shanghai), end.In(shanghai))
		}
	}
	if status, body, _ := api.call("GET", path+"?from="+from.UTC().Format(time.RFC3339)+"&to="+from.Add(-time.Hour).UTC().Format(time.RFC3339), ""); status != http.StatusUnprocessableEntity || errorField(body) != "to" {
		t.Errorf("to before from: %d %s", status, body["_raw"])
	}
}

// An inhibited alert is marked on the alerts list and on its page, each linking the
// alert that inhibits it; the one that inhibits is not marked.
func TestInhibitedAlertShownAndLinked(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	by := audit.Actor{Name: adminUser, Type: audit.ActorUser}
	if err := alert.Of(c.store).CreatePolicy(ctx, &alert.EscalationPolicy{Name: "night",
		Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}}); err != nil {
		t.Fatal(err)
	}
	it, _, err := c.h.Dispatch.Inbound().CreateIntegration(ctx, by, inbound.IntegrationInput{Name: "prom", Format: inbound.FormatEvents,
		DefaultRoute: &inbound.Route{Policy: "night", Platform: "sandbox"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dispatch.Inhibition(c.h.Dispatch).CreateRule(ctx, by, inhibit.RuleInput{Name: "db-down",
		Source: []delivery.Matcher{{Name: "severity", Value: "critical"}}, Target: []delivery.Matcher{{Name: "severity", Value: "warning"}},
		Equal: []string{"cluster"}}); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, ev := range []struct{ key, severity string }{{"db", "critical"}, {"slow", "warning"}} {
		recs, err := c.h.Dispatch.Inbound().Receive(ctx, it, fmt.Appendf(nil,
			`{"event_action":"trigger","dedup_key":%q,"severity":%q,"title":"%s on sh-core","labels":{"cluster":"sh-core"}}`, ev.key, ev.severity, ev.key))
		if err != nil || recs[0].AlertID == nil {
			t.Fatalf("%s: %+v, %v", ev.key, recs, err)
		}
		ids[ev.key] = strconv.FormatInt(*recs[0].AlertID, 10)
	}
	link := `href="/alerts/` + ids["db"] + `"`
	_, list := c.as(viewerUser).get("/alerts")
	row := list[strings.Index(list, `data-alert="`+ids["slow"]+`"`):]
	row = row[:strings.Index(row, "</tr>")]
	wantContains(t, "the inhibited alert's row", row, "data-inhibited", link)
	source := list[strings.Index(list, `data-alert="`+ids["db"]+`"`):]
	if source = source[:strings.Index(source, "</tr>")]; strings.Contains(source, "data-inhibited") {
		t.Errorf("the source's row is marked inhibited: %s", source)
	}
	_, page := c.as(viewerUser).get("/alerts/" + ids["slow"])
	wantContains(t, "the inhibited alert's page", page, `id="alert-inhibition"`, link, "db-down")
	// The API shows it too, on the alert and in the list (checked against openapi.json);
	// the source has none.
	api := c.apiKey("ops", "admin")
	status, one, _ := api.call("GET", "/api/v1/alerts/"+ids["slow"], "")
	in, _ := one["inhibition"].(map[string]any)
	if status != 200 || in == nil || one["inhibited"] != true || in["rule"] != "db-down" || in["state"] != "inhibited" || fmt.Sprint(in["source_alert_id"]) != ids["db"] {
		t.Errorf("GET the inhibited alert: %d %v", status, one)
	}
	status, all, _ := api.call("GET", "/api/v1/alerts", "")
	list2, _ := all["alerts"].([]any)
	for _, a := range list2 {
		a := a.(map[string]any)
		if _, has := a["inhibition"]; has != (fmt.Sprint(a["id"]) == ids["slow"]) {
			t.Errorf("alert %v in the list: inhibition %v", a["id"], a["inhibition"])
		}
	}
	if status != 200 || len(list2) != 2 {
		t.Errorf("GET the alerts: %d, %d alerts", status, len(list2))
	}
}
