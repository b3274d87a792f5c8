package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

// TestBlankTemplateVariables: a template's declared variable left blank (empty or only
// spaces) is refused by the compose form, its preview and POST /api/v1/messages alike,
// naming variables.<name>, unless the template marks the variable optional ("note?").
func TestBlankTemplateVariables(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	_, admin, err := c.store.Access().CreateAPIKey(ctx, "templates", "admin", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	_, sender, err := c.store.Access().CreateAPIKey(ctx, "ledger", "send", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := `{"name":"due-soon","body":"Please handle {{.task}} by {{.deadline}}.{{.note}}","variables":["task","deadline","note?"]}`
	var saved struct {
		Variables []string `json:"variables"`
	}
	if status := apiJSON(t, c, admin, "POST", "/api/v1/templates", tmpl, &saved); status != http.StatusCreated ||
		fmt.Sprint(saved.Variables) != "[task deadline note?]" {
		t.Fatalf("create template: %d %v", status, saved.Variables)
	}

	t.Run("api", func(t *testing.T) {
		for _, deadline := range []string{`""`, `"   "`} {
			body := `{"account":"sandbox","recipients":["E2001"],"template":"due-soon","variables":{"task":"Ledger 42","deadline":` + deadline + `}}`
			var e errorAnswer
			if status := apiJSON(t, c, sender, "POST", "/api/v1/messages", body, &e); status != http.StatusUnprocessableEntity ||
				e.Error.Field != "variables.deadline" {
				t.Errorf("deadline %s: %d naming %q, want 422 naming variables.deadline", deadline, status, e.Error.Field)
			}
		}
		// The optional variable blank, or left out: accepted.
		for _, vars := range []string{`{"task":"Ledger 42","deadline":"Friday","note":" "}`, `{"task":"Ledger 42","deadline":"Friday"}`} {
			body := `{"account":"sandbox","recipients":["E2001"],"template":"due-soon","variables":` + vars + `}`
			if status := apiJSON(t, c, sender, "POST", "/api/v1/messages", body, nil); status != http.StatusAccepted {
				t.Errorf("variables %s: %d, want 202", vars, status)
			}
		}
	})

	t.Run("console", func(t *testing.T) {
		op := c.as(operatorUser)
		sandbox, err := c.store.Sending().AccountByName(ctx, "sandbox")
		if err != nil {
			t.Fatal(err)
		}
		form := url.Values{"account": {fmt.Sprint(sandbox.ID)}, "template": {"due-soon"}, "priority": {"normal"},
			"recipient": {fmt.Sprint(c.recipient("E2001").ID)}, "variables.task": {"Ledger 42"}, "variables.deadline": {"  "},
			"variables.note": {""}}
		_, body := op.getHX("/compose/content?template=due-soon")
		wantContains(t, "compose form", body, `name="variables.deadline" value="" required`, `name="variables.note" value="">`, "optional")

		// The preview says so before anything is sent.
		resp, body := op.postHX("/compose/preview", form)
		wantStatus(t, "preview", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "preview", body, "deadline: must not be blank: template due-soon needs a value")

		resp, body = op.post("/compose", form)
		wantStatus(t, "send", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "variables.deadline", "must not be blank")

		// In Chinese too.
		zh := c.login(operatorUser)
		zh.post("/language", url.Values{"language": {"zh-CN"}, "next": {"/compose"}})
		resp, body = zh.post("/compose", form)
		wantStatus(t, "send in Chinese", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "variables.deadline", "不能为空")

		form.Set("variables.deadline", "Friday")
		resp, body = op.post("/compose", form)
		wantRedirect(t, "send with the optional variable blank", resp, body, "/batches/")
	})
}
