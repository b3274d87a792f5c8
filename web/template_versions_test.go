package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"herald/access"
	"herald/dispatch"
	"herald/models"
)

// TestTemplateVersionsConsole saves, compares and rolls back versions of a template on
// the console and through the API, with a scheduled message that uses it: the editor asks
// what it keeps, and re-renders it only when asked to.
func TestTemplateVersionsConsole(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	op := c.as(operatorUser)
	const v1Body = "Overdue: {{.task}}. Please handle it today."
	edit := func(body string, waiting string) (*http.Response, string) {
		t.Helper()
		form := url.Values{"name": {"task-overdue"}, "msg_type": {"text"}, "variables": {"task"}, "subject": {"Task overdue"}, "body": {body}}
		if waiting != "" {
			form.Set("waiting", waiting)
		}
		return op.post("/templates/task-overdue/edit", form)
	}
	resp, body := edit("Late: {{.task}}", "")
	wantRedirect(t, "save version 2", resp, body, "/templates")

	acct, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour)
	res, err := c.h.Dispatch.Submit(ctx, dispatch.Request{Source: "console", Actor: "test", AccountID: acct.ID, Recipients: []string{"E2001"},
		Template: "task-overdue", Variables: map[string]string{"task": "ledger"}, SendAt: &at})
	if err != nil {
		t.Fatal(err)
	}
	msgID := res.Messages[0].ID
	message := func() *models.Message {
		t.Helper()
		m, err := c.store.MessageByID(ctx, msgID)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := message(); m.Content != "Late: ledger" || m.TemplateVersion == nil || *m.TemplateVersion != 2 {
		t.Fatalf("scheduled message %q version %v, want version 2", m.Content, m.TemplateVersion)
	}
	resp, body = op.get("/messages/" + msgID)
	wantStatus(t, "message page", resp, body, http.StatusOK)
	wantContains(t, "message page", body, `data-template-version="2"`, "Template version")

	resp, body = op.get("/templates/task-overdue/edit")
	wantStatus(t, "editor", resp, body, http.StatusOK)
	wantContains(t, "editor", body, `data-waiting="1"`, "1 scheduled message uses this template.",
		`name="waiting" value="keep" checked`, `id="versions"`, `action="/templates/task-overdue/rollback"`, `action="/templates/task-overdue/diff"`)

	// Saved keeping the waiting message's version, then rendering it again.
	resp, body = edit("Soon: {{.task}}", "keep")
	wantRedirect(t, "save keeping", resp, body, "/templates")
	if m := message(); m.Content != "Late: ledger" || *m.TemplateVersion != 2 {
		t.Errorf("kept message %q version %d", m.Content, *m.TemplateVersion)
	}
	resp, body = edit("Now: {{.task}}", "rerender")
	wantRedirect(t, "save rendering again", resp, body, "/templates")
	if m := message(); m.Content != "Now: ledger" || *m.TemplateVersion != 4 {
		t.Errorf("rendered again: %q version %d, want version 4", m.Content, *m.TemplateVersion)
	}

	resp, body = c.as(viewerUser).get("/templates/task-overdue/diff?a=1&b=4")
	wantStatus(t, "diff", resp, body, http.StatusOK)
	wantContains(t, "diff", body, `data-field="body"`, "− Overdue: {{.task}}. Please handle it today.", "+ Now: {{.task}}", "Version 1", "Version 4")
	resp, body = op.get("/templates/task-overdue/diff?a=1&b=99")
	wantStatus(t, "diff of an unknown version", resp, body, http.StatusNotFound)

	// Rollback from the console: an unknown version is refused beside the field.
	resp, body = op.post("/templates/task-overdue/rollback", url.Values{"version": {"99"}, "waiting": {"keep"}})
	wantStatus(t, "rollback to an unknown version", resp, body, http.StatusUnprocessableEntity)
	wantContains(t, "rollback to an unknown version", body, "there is no version 99 (the latest is 4)")
	resp, body = op.post("/templates/task-overdue/rollback", url.Values{"version": {"1"}, "waiting": {"keep"}})
	wantRedirect(t, "rollback", resp, body, "/templates")
	if tmpl, err := c.store.Templates().TemplateByName(ctx, "task-overdue"); err != nil || tmpl.Body != v1Body || tmpl.Version != 5 {
		t.Errorf("after rollback: %+v, %v", tmpl, err)
	}
	if m := message(); m.Content != "Now: ledger" {
		t.Errorf("a rollback that keeps waiting messages changed one to %q", m.Content)
	}
	if e := c.lastAudit("template.rollback"); e.Actor != operatorUser || e.ParamMap()["from"] != "1" || e.ParamMap()["version"] != "5" {
		t.Errorf("rollback audit %+v %v", e, e.ParamMap())
	}

	t.Run("API", func(t *testing.T) {
		api := c.as("")
		keys := map[string]string{}
		for _, scope := range []string{access.ScopeAdmin, access.ScopeSend + "," + access.ScopeRead} {
			_, secret, err := c.store.Access().CreateAPIKey(ctx, "versions-"+strings.ReplaceAll(scope, ",", "-"), scope, adminUser)
			if err != nil {
				t.Fatal(err)
			}
			keys[strings.Split(scope, ",")[0]] = secret
		}
		call := func(scope, method, path, body string) (int, string) {
			t.Helper()
			resp, raw := api.do(method, path, "application/json", strings.NewReader(body), map[string]string{"Authorization": "Bearer " + keys[scope]})
			return resp.StatusCode, raw
		}
		status, raw := call(access.ScopeAdmin, "GET", "/api/v1/templates/task-overdue/versions", "")
		var list []struct {
			Number int    `json:"number"`
			Actor  string `json:"actor"`
			Body   string `json:"body"`
		}
		if err := json.Unmarshal([]byte(raw), &list); status != 200 || err != nil || len(list) != 5 || list[0].Number != 5 || list[4].Body != v1Body || list[0].Actor != operatorUser {
			t.Errorf("versions: %d %s", status, raw)
		}
		if status, raw := call(access.ScopeAdmin, "GET", "/api/v1/templates/task-overdue/versions/2", ""); status != 200 || !strings.Contains(raw, `"body":"Late: {{.task}}"`) {
			t.Errorf("version 2: %d %s", status, raw)
		}
		if status, _ := call(access.ScopeAdmin, "GET", "/api/v1/templates/task-overdue/versions/99", ""); status != 404 {
			t.Errorf("version 99: %d, want 404", status)
		}
		if status, _ := call(access.ScopeSend, "GET", "/api/v1/templates/task-overdue/versions", ""); status != 403 {
			t.Errorf("versions with a send key: %d, want 403", status)
		}
		if status, raw := call(access.ScopeAdmin, "POST", "/api/v1/templates/task-overdue/rollback", `{"version":2}`); status != 200 || !strings.Contains(raw, `"version":6`) {
			t.Errorf("rollback: %d %s", status, raw)
		}
		if status, raw := call(access.ScopeAdmin, "POST", "/api/v1/templates/task-overdue/rollback", `{"version":99}`); status != 422 || !strings.Contains(raw, `"field":"version"`) {
			t.Errorf("rollback to 99: %d %s", status, raw)
		}

		send := `{"platform":"sandbox","recipients":["E2001"],"template":"task-overdue","variables":{"task":"ledger"},"template_version":%d}`
		status, raw = call(access.ScopeSend, "POST", "/api/v1/messages", fmt.Sprintf(send, 1))
		var sent struct {
			Messages []struct {
				ID string `json:"id"`
			} `json:"messages"`
		}
		if err := json.Unmarshal([]byte(raw), &sent); status != 202 || err != nil || len(sent.Messages) != 1 {
			t.Fatalf("pinned send: %d %s", status, raw)
		}
		status, raw = call(access.ScopeSend, "GET", "/api/v1/messages/"+sent.Messages[0].ID, "")
		if status != 200 || !strings.Contains(raw, `"template_version":1`) {
			t.Errorf("pinned message: %d %s", status, raw)
		}
		if m, err := c.store.MessageByID(ctx, sent.Messages[0].ID); err != nil || m.Content != "Overdue: ledger. Please handle it today." {
			t.Errorf("pinned message content %+v, %v", m, err)
		}
		if status, raw := call(access.ScopeSend, "POST", "/api/v1/messages", fmt.Sprintf(send, 99)); status != 422 || !strings.Contains(raw, `"field":"template_version"`) {
			t.Errorf("send pinned to 99: %d %s", status, raw)
		}
	})
}

// A browser sends a textarea's lines ending in CR LF: saving the editor unchanged makes
// a version that diffs clean against the one it showed, and no CR is stored.
func TestTemplateSavedFromTheBrowserDiffsCleanAgainstItself(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	op := c.as(operatorUser)
	const text = "Overdue: {{.task}}\nPlease handle it today.\n\nThe operations desk"
	save := func(body string) {
		t.Helper()
		form := url.Values{"name": {"task-overdue"}, "msg_type": {"text"}, "variables": {"task"}, "subject": {"Task overdue"}, "body": {body}}
		resp, page := op.post("/templates/task-overdue/edit", form)
		wantRedirect(t, "save", resp, page, "/templates")
	}
	save(text)
	save(strings.ReplaceAll(text, "\n", "\r\n"))

	tmpl, err := c.store.Templates().TemplateByName(context.Background(), "task-overdue")
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Version != 3 || tmpl.Body != text {
		t.Errorf("after saving from the browser: version %d, body %q; want version 3, body %q", tmpl.Version, tmpl.Body, text)
	}
	resp, body := op.get("/templates/task-overdue/diff?a=2&b=3")
	wantStatus(t, "diff", resp, body, http.StatusOK)
	wantNotContains(t, "diff", body, "diff-removed", "diff-added")
	resp, body = op.get("/templates/task-overdue/diff?a=1&b=3")
	wantStatus(t, "diff with version 1", resp, body, http.StatusOK)
	wantContains(t, "diff with version 1", body, "diff-removed", "diff-added")
}
