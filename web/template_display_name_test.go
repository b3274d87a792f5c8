package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestNewTemplateFormIsEmpty(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	resp, body := c.as(operatorUser).get("/templates/new")
	wantStatus(t, "new template", resp, body, http.StatusOK)
	wantContains(t, "new template form", body, `id="name" name="name" value=""`, `id="display_name" name="display_name" value=""`,
		`id="variables" name="variables" value=""`, `rows="8" required></textarea>`, `id="samples" name="samples" class="mono" rows="4"></textarea>`)
	wantNotContains(t, "new template form", body, "Overdue:", "{{.task}}.", "task = ")
}

func TestTemplateDisplayName(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	op := c.as(operatorUser)

	t.Run("through the form", func(t *testing.T) {
		form := url.Values{"name": {"shift-start"}, "display_name": {"  交班提醒  "}, "msg_type": {"text"}, "variables": {"task"},
			"body": {"Start: {{.task}}"}}
		resp, body := op.post("/templates", form)
		wantRedirect(t, "create", resp, body, "/templates")
		tm, err := c.store.Templates().TemplateByName(ctx, "shift-start")
		if err != nil || tm.DisplayName != "交班提醒" {
			t.Fatalf("created %+v, %v; want the display name 交班提醒, trimmed", tm, err)
		}
		_, list := op.get("/templates")
		wantContains(t, "template list", list, "Created template 交班提醒.",
			`<a href="/templates/shift-start/edit">交班提醒</a>`, `<td class="mono">shift-start</td>`,
			// A template without a display name is listed by its name.
			`<a href="/templates/task-overdue/edit">task-overdue</a>`)
		_, edit := op.get("/templates/shift-start/edit")
		wantContains(t, "edit form", edit, `value="交班提醒"`, `value="shift-start"`, `maxlength="100"`)

		form.Set("display_name", strings.Repeat("长", 101))
		resp, body = op.post("/templates/shift-start/edit", form)
		wantStatus(t, "over-long display name", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "display_name", "has 101 characters; at most 100")
		form.Set("display_name", "交班\x01提醒")
		resp, body = op.post("/templates/shift-start/edit", form)
		wantStatus(t, "control character", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "display_name", "U+0001")
		if tm, _ := c.store.Templates().TemplateByName(ctx, "shift-start"); tm.DisplayName != "交班提醒" {
			t.Errorf("a refused edit changed the display name to %q", tm.DisplayName)
		}

		form.Set("display_name", "")
		resp, body = op.post("/templates/shift-start/edit", form)
		wantRedirect(t, "clear the display name", resp, body, "/templates")
		if tm, _ := c.store.Templates().TemplateByName(ctx, "shift-start"); tm.DisplayName != "" {
			t.Errorf("display name %q after clearing it", tm.DisplayName)
		}
	})

	t.Run("through the API", func(t *testing.T) {
		_, key, err := c.store.Access().CreateAPIKey(ctx, "templates", "admin", adminUser)
		if err != nil {
			t.Fatal(err)
		}
		api := c.as("")
		call := func(method, path, payload string) (*http.Response, map[string]any) {
			t.Helper()
			resp, answer := api.do(method, path, "application/json", strings.NewReader(payload),
				map[string]string{"Authorization": "Bearer " + key})
			out := map[string]any{}
			_ = json.Unmarshal([]byte(answer), &out)
			return resp, out
		}

		resp, got := call("POST", "/api/v1/templates", `{"name":"api-shift","display_name":"接口交班","body":"x"}`)
		if resp.StatusCode != http.StatusCreated || got["display_name"] != "接口交班" {
			t.Fatalf("create: %d %v", resp.StatusCode, got)
		}
		resp, got = call("GET", "/api/v1/templates/api-shift", "")
		if resp.StatusCode != http.StatusOK || got["display_name"] != "接口交班" || got["name"] != "api-shift" {
			t.Fatalf("get: %d %v", resp.StatusCode, got)
		}
		_, list := op.get("/templates")
		wantContains(t, "template list", list, "接口交班")

		resp, got = call("PUT", "/api/v1/templates/api-shift", `{"display_name":"`+strings.Repeat("长", 101)+`","body":"x"}`)
		e, _ := got["error"].(map[string]any)
		if resp.StatusCode != http.StatusUnprocessableEntity || e["field"] != "display_name" ||
			!strings.Contains(e["message"].(string), "has 101 characters; at most 100") {
			t.Errorf("over-long display name: %d %v, want 422 with the length and the limit", resp.StatusCode, got)
		}
		resp, got = call("PUT", "/api/v1/templates/api-shift", `{"display_name":"交班\u0007","body":"x"}`)
		if e, _ := got["error"].(map[string]any); resp.StatusCode != http.StatusUnprocessableEntity || e["field"] != "display_name" {
			t.Errorf("control character: %d %v, want 422 on display_name", resp.StatusCode, got)
		}
		if tm, _ := c.store.Templates().TemplateByName(ctx, "api-shift"); tm.DisplayName != "接口交班" {
			t.Errorf("a refused update changed the display name to %q", tm.DisplayName)
		}
	})
}
