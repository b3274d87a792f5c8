package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestTemplatesPage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	op := c.as(operatorUser)

	t.Run("list and read-only view for viewers", func(t *testing.T) {
		viewer := c.as(viewerUser)
		resp, body := viewer.get("/templates")
		wantStatus(t, "GET /templates", resp, body, http.StatusOK)
		wantContains(t, "template list", body, "task-overdue", "Task overdue")
		wantNotContains(t, "viewer's template list", body, "/templates/new")
		resp, body = viewer.get("/templates/task-overdue/edit")
		wantStatus(t, "view template", resp, body, http.StatusOK)
		wantContains(t, "template page", body, "Overdue: {{.task}}", "<fieldset class=\"panel\" disabled", "Overdue: sample task")
		wantNotContains(t, "viewer's template page", body, "Save template", "Send test", "Delete template")
	})

	t.Run("live preview renders sample values and shows errors inline", func(t *testing.T) {
		form := url.Values{"name": {"shift"}, "msg_type": {"text"}, "variables": {"task, due"}, "subject": {"{{.task}}"},
			"body": {"{{.recipient.name}}: {{.task}} by {{upper .due}}"}, "samples": {"task = Close ledger\ndue = friday"}}
		resp, body := op.postHX("/templates/preview", form)
		wantStatus(t, "preview", resp, body, http.StatusOK)
		wantContains(t, "preview", body, `id="template-preview"`, "Sample Person: Close ledger by FRIDAY", "Close ledger</div>")
		wantNotContains(t, "preview partial", body, "<html")

		form.Set("test_recipient", fmt.Sprint(c.recipient("E2001").ID))
		_, body = op.postHX("/templates/preview", form)
		wantContains(t, "preview for a chosen person", body, "Liu Yang: Close ledger by FRIDAY")

		form.Set("body", "{{.task}} for {{.owner}}")
		_, body = op.postHX("/templates/preview", form)
		wantContains(t, "preview of an undeclared variable", body, `id="preview-errors"`, "Body: uses undeclared variable owner")

		form.Set("body", "{{.task")
		_, body = op.postHX("/templates/preview", form)
		wantContains(t, "preview of a syntax error", body,
			"Body: line 1: an action opened with {{ is not closed with }} (the parser says: unclosed action)")

		form.Set("body", "{{.task}}")
		form.Set("samples", "")
		_, body = op.postHX("/templates/preview", form)
		wantContains(t, "preview without samples", body, "‹task›", "no sample value for task")
	})

	t.Run("create validates like the API and keeps the input", func(t *testing.T) {
		form := url.Values{"name": {"shift-start"}, "msg_type": {"text"}, "variables": {"task, task"}, "body": {"Start: {{.task}}"}}
		resp, body := op.post("/templates", form)
		wantStatus(t, "duplicate variable", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "variables", `&#34;task&#34; is declared twice`)
		wantContains(t, "form keeps input", body, `value="shift-start"`, "Start: {{.task}}")

		form.Set("variables", "task")
		form.Set("body", "Start: {{.task}} {{.shift}}")
		resp, body = op.post("/templates", form)
		wantStatus(t, "undeclared variable", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "body", "uses undeclared variable shift")

		form.Set("body", "Start: {{.task}}")
		resp, body = op.post("/templates", form)
		wantRedirect(t, "create", resp, body, "/templates")
		tm, err := c.store.Templates().TemplateByName(ctx, "shift-start")
		if err != nil || tm.Body != "Start: {{.task}}" || strings.Join(tm.Variables, ",") != "task" {
			t.Fatalf("created %+v, %v", tm, err)
		}
		c.lastAudit("template.create")

		resp, body = op.post("/templates", form)
		wantStatus(t, "duplicate name", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "name", "is already used by another template")
	})

	t.Run("runaway templates are refused on save and in the preview", func(t *testing.T) {
		tests := []struct{ field, src, message string }{
			{"body", `{{range 20}}{{printf "%999999d" 0}}{{end}}`, "line 1:8: range is not allowed"},
			{"body", `{{range 1000}}{{range 1000}}{{$.task}}{{end}}{{end}}`, "range is not allowed"},
			{"body", `{{printf "%999999d" 0}}`, "printf width 999999 exceeds 100"},
			{"subject", `{{printf "%.500s" .task}}`, "printf precision 500 exceeds 100"},
		}
		for _, tt := range tests {
			form := url.Values{"name": {"runaway"}, "msg_type": {"text"}, "variables": {"task"}, "subject": {""},
				"body": {"{{.task}}"}, "samples": {"task = x"}}
			form.Set(tt.field, tt.src)
			resp, body := op.post("/templates", form)
			wantStatus(t, "save "+tt.src, resp, body, http.StatusUnprocessableEntity)
			wantFieldError(t, body, tt.field, tt.message)
			_, body = op.postHX("/templates/preview", form)
			wantContains(t, "preview of "+tt.src, body, `id="preview-errors"`, strings.ToUpper(tt.field[:1])+tt.field[1:]+": ", tt.message)
		}
		if _, err := c.store.Templates().TemplateByName(ctx, "runaway"); err == nil {
			t.Error("a refused template was saved")
		}

		resp, body := op.post("/templates/task-overdue/edit", url.Values{"name": {"task-overdue"}, "msg_type": {"text"},
			"variables": {"task"}, "body": {`{{range .recipient}}{{.}}{{end}}`}})
		wantStatus(t, "edit to a range", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "body", "range is not allowed")
	})

	t.Run("edit renames", func(t *testing.T) {
		resp, body := op.post("/templates/shift-start/edit", url.Values{"name": {"shift-begin"}, "msg_type": {"markdown"},
			"variables": {"task"}, "body": {"**Start**: {{.task}}"}})
		wantRedirect(t, "update", resp, body, "/templates")
		if _, err := c.store.Templates().TemplateByName(ctx, "shift-start"); err == nil {
			t.Error("the old name still exists")
		}
		if tm, err := c.store.Templates().TemplateByName(ctx, "shift-begin"); err != nil || tm.MsgType != "markdown" {
			t.Fatalf("renamed %+v, %v", tm, err)
		}
		resp, body = op.post("/templates/nope/edit", url.Values{"name": {"nope"}, "msg_type": {"text"}, "body": {"x"}})
		wantStatus(t, "update unknown", resp, body, http.StatusNotFound)
	})

	t.Run("test send goes through intake", func(t *testing.T) {
		acct, err := c.store.Sending().AccountByName(ctx, "sandbox")
		if err != nil {
			t.Fatal(err)
		}
		form := url.Values{"name": {"task-overdue"}, "msg_type": {"text"}, "variables": {"task"}, "body": {"ignored"},
			"test_recipient": {fmt.Sprint(c.recipient("E2001").ID)}, "test_account": {fmt.Sprint(acct.ID)}, "samples": {""}}
		resp, body := op.post("/templates/task-overdue/test", form)
		wantStatus(t, "missing variable", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "test", "variables.task is required by template task-overdue")

		form.Set("samples", "task = Reconcile ledger 42")
		resp, body = op.post("/templates/task-overdue/test", form)
		loc := wantRedirect(t, "test send", resp, body, "/batches/")
		msgs, err := c.store.MessagesOfBatch(ctx, strings.TrimPrefix(loc, "/batches/"), 10)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("batch messages %v, %v", msgs, err)
		}
		if msgs[0].Content != "Overdue: Reconcile ledger 42. Please handle it today." || msgs[0].RecipientExternalID != "E2001" {
			t.Errorf("test message %+v", msgs[0].Message)
		}
		c.lastAudit("template.test_send")
	})

	t.Run("delete", func(t *testing.T) {
		resp, body := op.post("/templates/shift-begin/delete", nil)
		wantRedirect(t, "delete", resp, body, "/templates")
		if _, err := c.store.Templates().TemplateByName(ctx, "shift-begin"); err == nil {
			t.Error("template still exists")
		}
		resp, body = op.post("/templates/shift-begin/delete", nil)
		wantStatus(t, "delete again", resp, body, http.StatusNotFound)
	})

	t.Run("viewer cannot change templates", func(t *testing.T) {
		resp, body := c.as(viewerUser).post("/templates/task-overdue/delete", nil)
		wantStatus(t, "viewer deletes", resp, body, http.StatusForbidden)
	})
}
