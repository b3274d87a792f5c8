package migrations_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pressly/goose/v3"

	"herald/internal/testenv"
	"herald/migrations"
	"herald/models"
	"herald/templates"
)

// templateLF is the migration that turns stored templates' CR line breaks into LF.
const templateLF = 46

// Migration 00046, on the dialect the tests run on: templates stored with CR LF or a
// lone CR get LF only and a new version saying so, their older versions kept as they
// were; a template already in LF keeps its version; running it again changes nothing.
func TestTemplateLineFeedsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testenv.Store(t)
	ts := s.Templates()
	seed := []templates.Template{
		{Name: "crlf-body", MsgType: "text", Subject: "Late", Body: "Overdue:\r\nPlease handle it.\r\n"},
		{Name: "cr-html", MsgType: "text", Subject: "Late", Body: "plain", HTML: "<p>a</p>\r<p>b</p>"},
		{Name: "lf-only", MsgType: "text", Subject: "Late", Body: "Overdue:\nPlease handle it.\n"},
	}
	for i := range seed {
		if err := ts.CreateTemplate(ctx, &seed[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := ts.AddTemplateVersion(ctx, &seed[i], "ada"); err != nil {
			t.Fatal(err)
		}
	}

	redo(t, s)
	type version struct {
		Number            int
		Actor, Body, HTML string
	}
	want := map[string][]version{
		"crlf-body": {{2, templates.ActorLineFeeds, "Overdue:\nPlease handle it.\n", ""}, {1, "ada", "Overdue:\r\nPlease handle it.\r\n", ""}},
		"cr-html":   {{2, templates.ActorLineFeeds, "plain", "<p>a</p>\n<p>b</p>"}, {1, "ada", "plain", "<p>a</p>\r<p>b</p>"}},
		"lf-only":   {{1, "ada", "Overdue:\nPlease handle it.\n", ""}},
	}
	check := func(when string) {
		t.Helper()
		for name, versions := range want {
			tmpl, err := ts.TemplateByName(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			list, err := ts.TemplateVersions(ctx, tmpl.ID)
			if err != nil {
				t.Fatal(err)
			}
			var got []version
			for _, v := range list {
				got = append(got, version{v.Number, v.Actor, v.Body, v.HTML})
				if v.CreatedAt.IsZero() {
					t.Errorf("%s: %s: version %d has no time", when, name, v.Number)
				}
			}
			if diff := cmp.Diff(versions, got); diff != "" {
				t.Errorf("%s: versions of %s (-want +got):\n%s", when, name, diff)
			}
			if latest := versions[0]; tmpl.Version != latest.Number || tmpl.Body != latest.Body || tmpl.HTML != latest.HTML {
				t.Errorf("%s: template %s is version %d %q %q, want its latest version", when, name, tmpl.Version, tmpl.Body, tmpl.HTML)
			}
		}
	}
	check("after the migration")
	redo(t, s)
	check("after running it again")
}

// redo rolls migration 00046 back and applies it again on the store's database.
func redo(t *testing.T, s *models.Store) {
	t.Helper()
	ctx := context.Background()
	fsys, err := migrations.FS(s.Dialect())
	if err != nil {
		t.Fatal(err)
	}
	dialect := goose.DialectMySQL
	if s.Dialect() == migrations.SQLite {
		dialect = goose.DialectSQLite3
	}
	p, err := goose.NewProvider(dialect, s.SQL(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ApplyVersion(ctx, templateLF, false); err != nil {
		t.Fatalf("roll back %d: %v", templateLF, err)
	}
	if _, err := p.ApplyVersion(ctx, templateLF, true); err != nil {
		t.Fatalf("apply %d: %v", templateLF, err)
	}
}
