package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"herald/dispatch"
	"herald/kernel"
	"herald/models"
	"herald/templates"
)

// TestTemplateVersions follows a template through its versions: concurrent saves get
// distinct numbers, a scheduled message keeps the version it was rendered from unless
// the save asks to render it again, a send may pin an older version, and a rollback
// makes a new version equal to an old one.
func TestTemplateVersions(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	ctx := context.Background()
	by := user("ops1")
	in := templates.TemplateInput{Name: "shift", MsgType: "text", Body: "v1: {{.task}}", Variables: []string{"task"}}
	tmpl, err := f.d.Templates().CreateTemplate(ctx, by, in)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Version != 1 {
		t.Fatalf("a new template is version %d, want 1", tmpl.Version)
	}

	// Concurrent edits: each gets a number of its own.
	const edits = 6
	var wg sync.WaitGroup
	errs := make([]error, edits)
	for i := range edits {
		wg.Go(func() {
			e := in
			e.Body = fmt.Sprintf("edit %d: {{.task}}", i)
			_, errs[i] = f.d.Templates().UpdateTemplate(ctx, by, "shift", e)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	versions, err := f.store.Templates().TemplateVersions(ctx, tmpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, v := range versions {
		seen[v.Number] = true
		if v.Actor != "ops1" {
			t.Errorf("version %d saved by %q", v.Number, v.Actor)
		}
	}
	if len(versions) != edits+1 || len(seen) != edits+1 || versions[0].Number != edits+1 {
		t.Fatalf("versions %v after %d concurrent edits of version 1", seen, edits)
	}
	latest := edits + 1

	// A scheduled message renders the version current at intake, and keeps it.
	in.Body = "v-sched: {{.task}}"
	if _, err := f.d.Templates().UpdateTemplate(ctx, by, "shift", in); err != nil {
		t.Fatal(err)
	}
	latest++
	at := time.Now().Add(time.Hour)
	send := func(pin int) (*models.Message, error) {
		res, err := f.d.Submit(ctx, dispatch.Request{Source: "api", Actor: "apikey:intake", APIKeyID: &f.keyID, Platform: "sandbox",
			Recipients: []string{"E2001"}, Template: "shift", TemplateVersion: pin, Variables: map[string]string{"task": "ledger"}, SendAt: &at})
		if err != nil {
			return nil, err
		}
		return f.message(t, res.Messages[0].ID), nil
	}
	m, err := send(0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Content != "v-sched: ledger" || m.TemplateVersion == nil || *m.TemplateVersion != latest {
		t.Fatalf("scheduled message %q version %v, want version %d", m.Content, m.TemplateVersion, latest)
	}
	in.Body = "v-keep: {{.task}}"
	if _, err := f.d.Templates().UpdateTemplate(ctx, by, "shift", in); err != nil {
		t.Fatal(err)
	}
	if got := f.message(t, m.ID); got.Content != "v-sched: ledger" || *got.TemplateVersion != latest {
		t.Errorf("after a save that keeps it, the scheduled message is %q version %d", got.Content, *got.TemplateVersion)
	}
	latest++
	n, err := f.store.Intake().CountWaitingOfTemplate(ctx, tmpl.ID, time.Now())
	if err != nil || n != 1 {
		t.Errorf("waiting messages of the template: %d, %v; want 1", n, err)
	}

	// Rendered again when the save asks for it.
	in.Body, in.Rerender = "v-new: {{.task}} for {{.recipient.name}}", true
	if _, err := f.d.Templates().UpdateTemplate(ctx, by, "shift", in); err != nil {
		t.Fatal(err)
	}
	latest++
	if got := f.message(t, m.ID); got.Content != "v-new: ledger for Liu Yang" || *got.TemplateVersion != latest {
		t.Errorf("after a save that renders it again, the scheduled message is %q version %d, want version %d", got.Content, *got.TemplateVersion, latest)
	}
	if n := auditCount(t, f.store, "template.rerender"); n != 1 {
		t.Errorf("%d template.rerender entries, want 1", n)
	}

	// A pinned send renders the version named; an unknown one is refused.
	pinned, err := send(1)
	if err != nil {
		t.Fatal(err)
	}
	if pinned.Content != "v1: ledger" || *pinned.TemplateVersion != 1 {
		t.Errorf("pinned to version 1: %q version %d", pinned.Content, *pinned.TemplateVersion)
	}
	for _, pin := range []int{99, -1} {
		if _, err := send(pin); !isField(err, "template_version") {
			t.Errorf("pinned to version %d: %v, want an error naming template_version", pin, err)
		}
	}

	// Rollback: a new version equal to version 1.
	back, err := f.d.Templates().RollbackTemplate(ctx, by, "shift", 1, false)
	if err != nil {
		t.Fatal(err)
	}
	latest++
	if back.Version != latest || back.Body != "v1: {{.task}}" {
		t.Errorf("rolled back to version %d with body %q, want version %d", back.Version, back.Body, latest)
	}
	stored, err := f.store.Templates().TemplateByName(ctx, "shift")
	if err != nil || stored.Body != "v1: {{.task}}" || stored.Version != latest {
		t.Errorf("stored after rollback: %+v, %v", stored, err)
	}
	if n := auditCount(t, f.store, "template.rollback"); n != 1 {
		t.Errorf("%d template.rollback entries, want 1", n)
	}
	if _, err := f.d.Templates().RollbackTemplate(ctx, by, "shift", 99, false); !isField(err, "version") {
		t.Errorf("rollback to an unknown version: %v", err)
	}
	if _, err := f.d.Templates().RollbackTemplate(ctx, by, "nope", 1, false); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("rollback of an unknown template: %v", err)
	}
}

// message reads one message back from the store.
func (f *intakeFixture) message(t *testing.T, id string) *models.Message {
	t.Helper()
	m, err := f.store.MessageByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
