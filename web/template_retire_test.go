package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A version of a template is retired from the editor's list of versions (operators) or
// through the API; a send pinning it is then refused, naming template_version.
func TestRetireTemplateVersion(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	op := c.as(operatorUser)
	form := url.Values{"name": {"task-overdue"}, "msg_type": {"text"}, "variables": {"task"}, "subject": {"Task overdue"}, "body": {"Late: {{.task}}"}}
	resp, body := op.post("/templates/task-overdue/edit", form)
	wantRedirect(t, "save version 2", resp, body, "/templates")
	resp, body = op.get("/templates/task-overdue/edit")
	wantStatus(t, "editor", resp, body, http.StatusOK)
	wantContains(t, "editor", body, `action="/templates/task-overdue/retire"`, `name="version" value="1"`, "Retire")

	resp, body = op.post("/templates/task-overdue/retire", url.Values{"version": {"2"}})
	wantStatus(t, "retire the current version", resp, body, http.StatusUnprocessableEntity)
	wantContains(t, "retire the current version", body, "the template&#39;s current version")
	resp, body = op.post("/templates/task-overdue/retire", url.Values{"version": {"1"}})
	wantRedirect(t, "retire version 1", resp, body, "/templates")
	if e := c.lastAudit("template.version_retire"); e.Actor != operatorUser || e.ParamMap()["version"] != "1" {
		t.Errorf("audit entry %+v %v", e, e.ParamMap())
	}
	resp, body = op.get("/templates/task-overdue/edit")
	wantContains(t, "editor after retiring", body, `data-retired="1"`)

	_, secret, err := c.store.Access().CreateAPIKey(ctx, "retire-admin", "send,admin", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	api := func(method, path, body string) (*http.Response, string) {
		t.Helper()
		return c.as("").do(method, path, "application/json", strings.NewReader(body), map[string]string{"Authorization": "Bearer " + secret})
	}
	resp, body = api("POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2001"],"template":"task-overdue","template_version":1,"variables":{"task":"ledger"}}`)
	wantStatus(t, "a send pinning a retired version", resp, body, http.StatusUnprocessableEntity)
	wantContains(t, "a send pinning a retired version", body, `"field":"template_version"`, "retired")
	resp, body = api("POST", "/api/v1/templates/task-overdue/versions/1/retire", "")
	wantStatus(t, "API retires a retired version", resp, body, http.StatusUnprocessableEntity)
	wantContains(t, "API retires a retired version", body, `"field":"version"`)
	resp, body = api("GET", "/api/v1/templates/task-overdue/versions/1", "")
	wantStatus(t, "API reads the retired version", resp, body, http.StatusOK)
	wantContains(t, "API reads the retired version", body, `"retired_by":"`+operatorUser+`"`)
}
