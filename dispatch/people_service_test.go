package dispatch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"herald/audit"
	"herald/directory"
	"herald/i18n"
	"herald/kernel"
	"herald/models"
	"herald/templates"
)

// TestRecipientService checks the recipient writes' rules once for the console, the API
// and the CSV import: a bad person names the field and leaves no row and no audit entry;
// a good one leaves the row and its entry, with what changed.
func TestRecipientService(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	ctx := context.Background()
	by := audit.Actor{Name: "ops1", Type: audit.ActorUser, Person: "ops1", IP: "192.0.2.1"}
	good := directory.Recipient{ExternalID: "N1", Name: "Niu Lan", OrgType: directory.Branch, Branch: "Pudong", Active: true}

	for _, tc := range []struct {
		name  string
		r     directory.Recipient
		field string
	}{
		{"bad external id", directory.Recipient{ExternalID: "a b", Name: "x", OrgType: directory.Branch}, "external_id"},
		{"no name", directory.Recipient{ExternalID: "N2", Name: "  ", OrgType: directory.Branch}, "name"},
		{"bad org type", directory.Recipient{ExternalID: "N2", Name: "x", OrgType: "board"}, "org_type"},
		{"bad email", directory.Recipient{ExternalID: "N2", Name: "x", OrgType: directory.Branch, Email: "not mail"}, "email"},
		{"external id in use", directory.Recipient{ExternalID: "E1001", Name: "x", OrgType: directory.Branch}, "external_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.d.Directory().CreateRecipient(ctx, by, tc.r)
			var fe *kernel.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("got %v, want an error naming %s", err, tc.field)
			}
			if _, err := f.store.Directory().RecipientByExternalID(ctx, "N2"); !errors.Is(err, kernel.ErrNotFound) {
				t.Errorf("a refused person was stored: %v", err)
			}
			if n := auditCount(t, f.store, "recipient.create"); n != 0 {
				t.Errorf("a refused change wrote %d audit entries", n)
			}
		})
	}

	if _, err := f.d.Directory().CreateRecipient(ctx, by, good); err != nil {
		t.Fatal(err)
	}
	if r, err := f.store.Directory().RecipientByExternalID(ctx, "N1"); err != nil || r.Name != "Niu Lan" {
		t.Fatalf("stored %+v, %v", r, err)
	}
	e := lastEntry(t, f.store, "recipient.create")
	if e.Actor != "ops1" || e.IP != "192.0.2.1" || e.TargetID != "N1" || e.ParamMap()["name"] != "Niu Lan" {
		t.Errorf("audit entry %+v params %v", e, e.ParamMap())
	}

	// An update names each change, old and new; a bad one changes nothing.
	bad := good
	bad.Email = "nope"
	if _, err := f.d.Directory().UpdateRecipient(ctx, by, "N1", bad); !isField(err, "email") {
		t.Errorf("bad update: %v", err)
	}
	if n := auditCount(t, f.store, "recipient.update"); n != 0 {
		t.Errorf("a refused update wrote %d audit entries", n)
	}
	changed := good
	changed.Department = "Treasury"
	if _, err := f.d.Directory().UpdateRecipient(ctx, by, "N1", changed); err != nil {
		t.Fatal(err)
	}
	if p := lastEntry(t, f.store, "recipient.update").ParamMap(); p["changes"] != "department:  → Treasury" {
		t.Errorf("update params %v", p)
	}
	if _, err := f.d.Directory().UpdateRecipient(ctx, by, "N404", changed); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("update of nobody: %v", err)
	}

	if _, err := f.d.Directory().SetRecipientActive(ctx, by, "N1", false); err != nil {
		t.Fatal(err)
	}
	if r, _ := f.store.Directory().RecipientByExternalID(ctx, "N1"); r.Active {
		t.Error("still active")
	}
	if e := lastEntry(t, f.store, "recipient.deactivate"); e.TargetID != "N1" {
		t.Errorf("deactivate entry %+v", e)
	}
	if _, err := f.d.Directory().SetRecipientActive(ctx, by, "N404", true); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("activate nobody: %v", err)
	}
	if n := auditCount(t, f.store, "recipient.activate"); n != 0 {
		t.Errorf("activating nobody wrote %d entries", n)
	}
}

// TestUpsertRecipientsService checks the bulk write the API and the CSV import share:
// a bad list names the person by position and writes nothing; a good one writes every
// person, one entry for the whole write and one per person changed.
func TestUpsertRecipientsService(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	ctx := context.Background()
	by := audit.Actor{Name: "apikey:hr", Type: audit.ActorAPIKey, Person: "admin", IP: "192.0.2.9"}
	p := func(id, name string) directory.Recipient {
		return directory.Recipient{ExternalID: id, Name: name, OrgType: directory.Branch, Active: true}
	}
	for _, tc := range []struct {
		name  string
		list  []directory.Recipient
		field string
	}{
		{"none", nil, ""},
		{"bad second", []directory.Recipient{p("U1", "A"), p("U2", "")}, "[1].name"},
		{"twice", []directory.Recipient{p("U1", "A"), p("U1", "B")}, "[1].external_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.d.Directory().UpsertRecipients(ctx, by, directory.ViaAPI, tc.list)
			if !isField(err, tc.field) {
				t.Fatalf("got %v, want an error naming %q", err, tc.field)
			}
			if _, err := f.store.Directory().RecipientByExternalID(ctx, "U1"); !errors.Is(err, kernel.ErrNotFound) {
				t.Errorf("a refused list stored U1: %v", err)
			}
			if n := auditCount(t, f.store, "recipients.upsert") + auditCount(t, f.store, "recipient.create"); n != 0 {
				t.Errorf("a refused list wrote %d audit entries", n)
			}
		})
	}

	e1001, err := f.store.Directory().RecipientByExternalID(ctx, "E1001")
	if err != nil {
		t.Fatal(err)
	}
	renamed := *e1001
	renamed.Name = "Renamed"
	for _, via := range []string{directory.ViaAPI, directory.ViaImport} {
		list := []directory.Recipient{p("U1", "A "+via), renamed}
		res, err := f.d.Directory().UpsertRecipients(ctx, by, via, list)
		if err != nil {
			t.Fatal(err)
		}
		if via == directory.ViaAPI && (res.Created != 1 || res.Updated != 1) {
			t.Errorf("%s: %+v", via, res)
		}
	}
	if e := lastEntry(t, f.store, "recipients.upsert"); e.ParamMap()["created"] != "1" || e.ParamMap()["updated"] != "1" {
		t.Errorf("upsert entry %v", e.ParamMap())
	}
	if e := lastEntry(t, f.store, "recipients.import"); e.ParamMap()["updated"] != "1" || e.ParamMap()["unchanged"] != "1" {
		t.Errorf("import entry %v", e.ParamMap())
	}
	create := lastEntry(t, f.store, "recipient.create")
	if create.TargetID != "U1" || create.ParamMap()["via"] != directory.ViaAPI || create.Actor != "apikey:hr" {
		t.Errorf("create entry %+v %v", create, create.ParamMap())
	}
	update := lastEntry(t, f.store, "recipient.update")
	if update.TargetID != "U1" || update.ParamMap()["via"] != directory.ViaImport || update.ParamMap()["fields"] != "name" ||
		update.ParamMap()["changes"] != "name: A api → A csv" {
		t.Errorf("update entry %+v %v", update, update.ParamMap())
	}
	// The audit page's sentence, in both languages.
	args := []any{}
	for k, v := range update.ParamMap() {
		args = append(args, k, v)
	}
	if en := i18n.In(i18n.English, "audit.event.recipient_update", args...); !strings.Contains(en, "by a CSV import: name: A api → A csv") {
		t.Errorf("English sentence %q", en)
	}
	if zh := i18n.In(i18n.Chinese, "audit.event.recipient_update", args...); !strings.HasPrefix(zh, "CSV 导入修改人员 A csv（U1）") {
		t.Errorf("Chinese sentence %q", zh)
	}
	if en := i18n.In(i18n.English, "audit.event.recipient_create", "name", "X", "external_id", "X1"); en != "Person X (X1) added" {
		t.Errorf("console create sentence %q", en)
	}
}

// TestTemplateService checks the template writes' rules once for the console and the
// API, and the optional variable's mark.
func TestTemplateService(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	ctx := context.Background()
	by := audit.Actor{Name: "ops1", Type: audit.ActorUser, Person: "ops1", IP: "192.0.2.1"}
	good := templates.TemplateInput{Name: "late", Body: "Late: {{.task}}{{.note}}", Variables: []string{"task", "note?"}}

	for _, tc := range []struct {
		name  string
		in    templates.TemplateInput
		field string
	}{
		{"bad name", templates.TemplateInput{Name: "a b", Body: "x"}, "name"},
		{"bad type", templates.TemplateInput{Name: "x", MsgType: "html", Body: "x"}, "msg_type"},
		{"no body", templates.TemplateInput{Name: "x", Body: " "}, "body"},
		{"undeclared variable", templates.TemplateInput{Name: "x", Body: "{{.task}}"}, "body"},
		{"bad variable", templates.TemplateInput{Name: "x", Body: "x", Variables: []string{"a-b?"}}, "variables"},
		{"variable twice", templates.TemplateInput{Name: "x", Body: "x", Variables: []string{"a", "a?"}}, "variables"},
		{"syntax", templates.TemplateInput{Name: "x", Body: "{{.task"}, "body"},
		{"bad fallback", templates.TemplateInput{Name: "x", Body: "x", Fallback: "pigeon"}, "fallback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.d.Templates().CreateTemplate(ctx, by, tc.in)
			if !isField(err, tc.field) {
				t.Fatalf("got %v, want an error naming %s", err, tc.field)
			}
			if _, err := f.store.Templates().TemplateByName(ctx, tc.in.Name); !errors.Is(err, kernel.ErrNotFound) {
				t.Errorf("a refused template was stored: %v", err)
			}
			if n := auditCount(t, f.store, "template.create"); n != 0 {
				t.Errorf("a refused change wrote %d audit entries", n)
			}
		})
	}

	if _, err := f.d.Templates().CreateTemplate(ctx, by, good); err != nil {
		t.Fatal(err)
	}
	if e := lastEntry(t, f.store, "template.create"); e.TargetID != "late" || e.ParamMap()["variables"] != "task, note?" {
		t.Errorf("create entry %+v %v", e, e.ParamMap())
	}
	if _, err := f.d.Templates().CreateTemplate(ctx, by, good); !isField(err, "name") {
		t.Errorf("a second template of one name: %v", err)
	}
	if n := auditCount(t, f.store, "template.create"); n != 1 {
		t.Errorf("%d create entries, want 1", n)
	}

	renamed := good
	renamed.Name, renamed.Body = "later", "Later: {{.task}}{{.note}}"
	if _, err := f.d.Templates().UpdateTemplate(ctx, by, "late", renamed); err != nil {
		t.Fatal(err)
	}
	if p := lastEntry(t, f.store, "template.update").ParamMap(); p["old_name"] != "late" || p["name"] != "later" || p["changed"] != "name, body" {
		t.Errorf("update params %v", p)
	}
	if _, err := f.d.Templates().UpdateTemplate(ctx, by, "late", renamed); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("update of a renamed template: %v", err)
	}
	if err := f.d.Templates().DeleteTemplate(ctx, by, "later"); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Templates().DeleteTemplate(ctx, by, "later"); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("deleting it again: %v", err)
	}
	if n := auditCount(t, f.store, "template.delete"); n != 1 {
		t.Errorf("%d delete entries, want 1", n)
	}
}

// TestBlankVariables: a declared variable left blank, empty or only spaces, is refused
// naming variables.<name>, unless the template marks it optional; an optional one may
// also be left out, and renders empty.
func TestBlankVariables(t *testing.T) {
	t.Parallel()
	c, err := templates.CompileTemplate(&templates.Template{Name: "late", MsgType: "text", Body: "Do {{.task}} by {{.due}}.{{.note}}",
		Variables: templates.StringList{"task", "due", "note?"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		vars  map[string]string
		field string
	}{
		{"empty", map[string]string{"task": "", "due": "Fri"}, "variables.task"},
		{"spaces", map[string]string{"task": "x", "due": "   "}, "variables.due"},
		{"missing", map[string]string{"task": "x"}, "variables.due"},
		{"optional blank", map[string]string{"task": "x", "due": "Fri", "note": " "}, ""},
		{"optional left out", map[string]string{"task": "x", "due": "Fri"}, ""},
	} {
		err := c.CheckVariables(tc.vars)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !isField(err, tc.field) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.field)
		}
	}
	_, body, err := c.Render(context.Background(), "", map[string]string{"task": "x", "due": "Fri"}, &directory.Recipient{Name: "A"})
	if err != nil || body != "Do x by Fri." {
		t.Errorf("render without the optional variable: %q, %v", body, err)
	}
}

// TestTemplateSyntaxErrorInChinese: what the parser reports reads as a sentence with the
// line in both languages, the parser's words kept beside it.
func TestTemplateSyntaxErrorInChinese(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, en, zh string }{
		{"{{.task", "line 1: an action opened with {{ is not closed with }} (the parser says: unclosed action)",
			"第 1 行：以 {{ 开始的动作没有用 }} 结束（解析器原文：unclosed action）"},
		{"a\n{{if .task}}x", "line 2: the template ends too early: a closing }} or an {{end}} is missing (the parser says: unexpected EOF)",
			"第 2 行：模板提前结束了：缺少收尾的 }} 或 {{end}}（解析器原文：unexpected EOF）"},
		{"{{nosuch .task}}", "line 1: it uses a function that templates do not have", "第 1 行：用到了模板中没有的函数"},
	} {
		_, err := templates.CompileTemplate(&templates.Template{Name: "x", MsgType: "text", Body: tc.body, Variables: templates.StringList{"task"}})
		var fe *kernel.FieldError
		if !errors.As(err, &fe) || fe.Field != "body" {
			t.Fatalf("%q: %v", tc.body, err)
		}
		if en := fe.Text(i18n.English); !strings.HasPrefix(en, tc.en) {
			t.Errorf("%q: English %q, want %q", tc.body, en, tc.en)
		}
		if zh := fe.Text(i18n.Chinese); !strings.HasPrefix(zh, tc.zh) {
			t.Errorf("%q: Chinese %q, want %q", tc.body, zh, tc.zh)
		}
	}
}

// isField reports whether err is a validation failure of field.
func isField(err error, field string) bool {
	var fe *kernel.FieldError
	return errors.As(err, &fe) && fe.Field == field
}

// lastEntry is the newest audit entry of an action.
func lastEntry(t *testing.T, s *models.Store, action string) audit.Entry {
	t.Helper()
	entries, err := s.AuditLog().List(context.Background(), audit.Filter{Action: action}, 1)
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit entries of %s: %+v, %v", action, entries, err)
	}
	return entries[0]
}
