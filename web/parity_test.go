package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/access"
	"herald/audit"
	"herald/duty"
	"herald/templates"
)

// parityCase is one action that both the console and the API offer: the same input
// given to each, as a form and as a JSON body.
type parityCase struct {
	name string
	// form and formPath are the console's submission; method, path and body the API's.
	formPath     string
	form         url.Values
	method, path string
	body         string
	// field is the field a bad input must be refused on; "" for a good input.
	field string
	// action is the audit action a good input records; state reads back what it left
	// (the rows, as a comparable value); reset removes it before the other side runs.
	action string
	state  func(c *console) any
	reset  func(c *console)
}

// TestConsoleAPIParity gives the console and the API the same input for every action
// both offer: bad input is refused by both, naming the same field with the same
// sentence; good input leaves the same rows and the same audit entry, whoever sends it.
func TestConsoleAPIParity(t *testing.T) {
	c := newConsole(t)
	ctx := context.Background()
	_, key, err := c.store.Access().CreateAPIKey(ctx, "parity", access.ScopeAdmin, adminUser)
	if err != nil {
		t.Fatal(err)
	}
	admin := c.as(adminUser)

	rotation := func(name string) func(*console) any {
		return func(c *console) any {
			r, err := c.store.Duty().RotationByName(ctx, name)
			if err != nil {
				return err.Error()
			}
			specs, err := c.store.Duty().RotationSpecs(ctx, []duty.Rotation{*r})
			if err != nil {
				t.Fatal(err)
			}
			return specs[0]
		}
	}
	dropRotation := func(name string) func(*console) {
		return func(c *console) {
			if err := c.store.Duty().DeleteRotation(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := c.today(3)
	template := func(name string) func(*console) any {
		return func(c *console) any {
			t, err := c.store.Templates().TemplateByName(ctx, name)
			if err != nil {
				return err.Error()
			}
			return []any{t.Name, t.DisplayName, t.MsgType, t.Subject, t.Body, t.HTML, []string(t.Variables), templates.Chain(t.Fallback)}
		}
	}
	dropTemplate := func(name string) func(*console) {
		return func(c *console) {
			if err := c.store.Templates().DeleteTemplate(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	override := func(date string) func(*console) any {
		return func(c *console) any {
			list, err := c.store.Duty().OverridesBetween(ctx, date, date)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, o := range list {
				out = append(out, fmt.Sprint(o.Date, o.Action, o.Note))
			}
			return out
		}
	}
	dropOverride := func(date, ext string) func(*console) {
		return func(c *console) {
			if err := c.store.Duty().DeleteOverride(ctx, date, c.recipient(ext).ID); err != nil {
				t.Fatal(err)
			}
		}
	}

	cases := []parityCase{
		{name: "rotation without members", formPath: "/duty/rotations",
			form:   url.Values{"name": {"desk"}, "turn.0.at": {"1"}, "start": {start}, "turn_days": {"1"}, "covers": {"workdays"}},
			method: "POST", path: "/api/v1/duty/rotations",
			body:  `{"name":"desk","members":[],"start":"` + start + `","turn_days":1,"covers":"workdays"}`,
			field: "members"},
		{name: "rotation with a bad start", formPath: "/duty/rotations",
			form:   url.Values{"name": {"desk"}, "turn.0.at": {"1"}, "turn.0.member": {"E1001"}, "start": {"soon"}, "turn_days": {"1"}, "covers": {"workdays"}},
			method: "POST", path: "/api/v1/duty/rotations",
			body:  `{"name":"desk","members":["E1001"],"start":"soon","turn_days":1,"covers":"workdays"}`,
			field: "start"},
		{name: "rotation", formPath: "/duty/rotations",
			form:   url.Values{"name": {"desk"}, "turn.0.at": {"1"}, "turn.0.member": {"E1001"}, "turn.1.at": {"1"}, "turn.1.member": {"E1003", "E1004"}, "start": {start}, "turn_days": {"1"}, "covers": {"weekdays"}, "weekdays": {"1", "3"}},
			method: "POST", path: "/api/v1/duty/rotations",
			body:   `{"name":"desk","members":["E1001","E1003+E1004"],"start":"` + start + `","turn_days":1,"covers":"weekdays","weekdays":[1,3]}`,
			action: "duty.rotation.create", state: rotation("desk"), reset: dropRotation("desk")},

		{name: "template with a bad body", formPath: "/templates",
			form:   url.Values{"name": {"overdue"}, "msg_type": {"text"}, "body": {"Overdue: {{.task"}, "variables": {"task"}},
			method: "POST", path: "/api/v1/templates",
			body:  `{"name":"overdue","msg_type":"text","body":"Overdue: {{.task","variables":["task"]}`,
			field: "body"},
		{name: "template with a bad name", formPath: "/templates",
			form:   url.Values{"name": {"over due!"}, "msg_type": {"text"}, "body": {"Overdue"}},
			method: "POST", path: "/api/v1/templates",
			body:  `{"name":"over due!","msg_type":"text","body":"Overdue"}`,
			field: "name"},
		{name: "template", formPath: "/templates",
			form:   url.Values{"name": {"overdue"}, "msg_type": {"markdown"}, "subject": {"Late"}, "body": {"Overdue: {{.task}} {{.note}}"}, "variables": {"task, note?"}},
			method: "POST", path: "/api/v1/templates",
			body:   `{"name":"overdue","msg_type":"markdown","subject":"Late","body":"Overdue: {{.task}} {{.note}}","variables":["task","note?"]}`,
			action: "template.create", state: template("overdue"), reset: dropTemplate("overdue")},

		{name: "override in the past", formPath: "/duty/overrides",
			form:   url.Values{"date": {c.today(-2)}, "recipient": {"E1001"}, "action": {"add"}},
			method: "PUT", path: "/api/v1/duty/overrides",
			body:  `{"date":"` + c.today(-2) + `","recipient":"E1001","action":"add"}`,
			field: "date"},
		{name: "override of nobody", formPath: "/duty/overrides",
			form:   url.Values{"date": {c.today(2)}, "recipient": {"E9999"}, "action": {"add"}},
			method: "PUT", path: "/api/v1/duty/overrides",
			body:  `{"date":"` + c.today(2) + `","recipient":"E9999","action":"add"}`,
			field: "recipient"},
		{name: "override", formPath: "/duty/overrides",
			form:   url.Values{"date": {c.today(2)}, "recipient": {"E1001"}, "action": {"add"}, "note": {"cover"}},
			method: "PUT", path: "/api/v1/duty/overrides",
			body:   `{"date":"` + c.today(2) + `","recipient":"E1001","action":"add","note":"cover"}`,
			action: "duty.override.set", state: override(c.today(2)), reset: dropOverride(c.today(2), "E1001")},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, page := admin.post(tc.formPath, tc.form)
			if tc.field == "" {
				// Good input: the console first; read what it left, undo it, and let
				// the API do the same from scratch.
				if resp.StatusCode != 303 {
					t.Fatalf("console: %d\n%s", resp.StatusCode, page)
				}
				consoleState, consoleEntry := tc.state(c), c.lastAudit(tc.action)
				tc.reset(c)
				var answer errorAnswer
				if status := apiJSON(t, c, key, tc.method, tc.path, tc.body, &answer); status >= 300 {
					t.Fatalf("API: %d naming %q", status, answer.Error.Field)
				}
				apiState, apiEntry := tc.state(c), c.lastAudit(tc.action)
				if consoleEntry.ID == apiEntry.ID {
					t.Fatal("the API wrote no audit entry")
				}
				if d := cmp.Diff(consoleState, apiState); d != "" {
					t.Errorf("rows (-console +API):\n%s", d)
				}
				if d := cmp.Diff(comparableEntry(consoleEntry), comparableEntry(apiEntry)); d != "" {
					t.Errorf("audit entry (-console +API):\n%s", d)
				}
				return
			}
			var answer struct {
				Error struct{ Code, Message, Field string } `json:"error"`
			}
			status := apiJSON(t, c, key, tc.method, tc.path, tc.body, &answer)
			beside := html.UnescapeString(fieldError(page, tc.field))
			if resp.StatusCode != 422 || beside == "" {
				t.Fatalf("console: %d, error beside %s %q", resp.StatusCode, tc.field, beside)
			}
			if status != 422 || answer.Error.Field != tc.field || answer.Error.Code != "validation_failed" {
				t.Fatalf("API: %d %+v, want 422 naming %s", status, answer.Error, tc.field)
			}
			if !strings.Contains(answer.Error.Message, beside) {
				t.Errorf("the API says %q, the console %q", answer.Error.Message, beside)
			}
		})
	}
}

// comparableEntry is what an audit entry says of the change, leaving out who made it,
// when and from where.
func comparableEntry(e audit.Entry) map[string]string {
	out := map[string]string{"action": e.Action, "target_type": e.TargetType, "target_id": e.TargetID, "detail": e.Detail}
	maps.Copy(out, e.ParamMap())
	if e.Params != nil {
		var check map[string]string
		if err := json.Unmarshal([]byte(*e.Params), &check); err != nil {
			out["params"] = "not JSON: " + *e.Params
		}
	}
	return out
}
