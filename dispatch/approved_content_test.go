package dispatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"herald/dispatch"
	"herald/kernel"
	"herald/models"
	"herald/recall"
	"herald/templates"
)

// What is approved is what is sent: an edit (or a rollback) that asks to render the
// template's waiting messages again leaves those of a batch awaiting approval, and of
// one approved and scheduled, as they were; a scheduled batch that needed no approval
// is rendered again as before.
func TestRerenderKeepsApprovedContent(t *testing.T) {
	f := approvalFixture(t)
	ctx := context.Background()
	editor := user("eve")
	in := templates.TemplateInput{Name: "payout", MsgType: "text", Body: "Pay {{.amount}} to account 42", Variables: []string{"amount"}}
	if _, err := f.d.Templates().CreateTemplate(ctx, user("ada"), in); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour)
	send := func(people ...string) *models.Batch {
		t.Helper()
		res, err := f.d.Submit(ctx, dispatch.Request{Source: "api", Actor: "apikey:intake", APIKeyID: &f.keyID, Platform: "sandbox",
			Recipients: people, Template: "payout", Variables: map[string]string{"amount": "100"}, SendAt: &at, Makers: []string{"test"}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Batch
	}
	awaiting := send("E2001", "E2002")
	approved := send("E2001", "E2002")
	open := send("E2001")
	if awaiting.Approval != models.ApprovalAwaiting || open.Approval != "" {
		t.Fatalf("batches %q and %q, want awaiting approval and open", awaiting.Approval, open.Approval)
	}
	if err := f.d.Approve(ctx, user("bob"), approved); err != nil {
		t.Fatal(err)
	}
	contents := func(b *models.Batch) []string {
		t.Helper()
		msgs, err := recall.Of(f.store).BatchMessagesIn(ctx, b.ID, []models.Status{models.StatusPending})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.Content)
		}
		return out
	}
	check := func(step string, b *models.Batch, want string) {
		t.Helper()
		got := contents(b)
		if len(got) == 0 {
			t.Fatalf("%s: batch %s has no pending messages", step, b.ID)
		}
		for _, c := range got {
			if c != want {
				t.Errorf("%s: a message of the %q batch says %q, want %q", step, b.Status(), c, want)
			}
		}
	}

	in.Body, in.Rerender = "Pay {{.amount}} to account 666", true
	if _, err := f.d.Templates().UpdateTemplate(ctx, editor, "payout", in); err != nil {
		t.Fatal(err)
	}
	check("edit", awaiting, "Pay 100 to account 42")
	check("edit", approved, "Pay 100 to account 42")
	check("edit", open, "Pay 100 to account 666")
	if e := lastEntry(t, f.store, "template.rerender"); e.ParamMap()["count"] != "1" {
		t.Errorf("template.rerender counts %q messages, want 1 (the open batch's)", e.ParamMap()["count"])
	}

	if _, err := f.d.Templates().RollbackTemplate(ctx, editor, "payout", 2, true); err != nil {
		t.Fatal(err)
	}
	check("rollback", awaiting, "Pay 100 to account 42")
	check("rollback", approved, "Pay 100 to account 42")

	// The batch still awaiting approval is approved as it was made.
	if err := f.d.Approve(ctx, editor, awaiting); err != nil {
		t.Fatal(err)
	}
	check("approval", awaiting, "Pay 100 to account 42")
	tmpl, err := f.store.Templates().TemplateByName(ctx, "payout")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.store.Intake().CountWaitingOfTemplate(ctx, tmpl.ID, time.Now()); err != nil || n != 1 {
		t.Errorf("waiting messages a save asks about: %d, %v; want 1 (the open batch's)", n, err)
	}
}

// A retired template version can no longer be pinned by a send (a field error on
// template_version) nor restored by a rollback; the current version cannot be retired,
// and retiring is audited.
func TestRetiredTemplateVersionCannotBePinned(t *testing.T) {
	f := newIntakeFixture(t)
	ctx := context.Background()
	by := user("ops1")
	in := templates.TemplateInput{Name: "notice", MsgType: "text", Body: "v1: {{.task}}", Variables: []string{"task"}}
	if _, err := f.d.Templates().CreateTemplate(ctx, by, in); err != nil {
		t.Fatal(err)
	}
	in.Body = "v2: {{.task}}"
	if _, err := f.d.Templates().UpdateTemplate(ctx, by, "notice", in); err != nil {
		t.Fatal(err)
	}
	send := func(pin int) error {
		_, err := f.d.Submit(ctx, dispatch.Request{Source: "api", Actor: "apikey:intake", APIKeyID: &f.keyID, Platform: "sandbox",
			Recipients: []string{"E2001"}, Template: "notice", TemplateVersion: pin, Variables: map[string]string{"task": "ledger"}})
		return err
	}
	if err := send(1); err != nil {
		t.Fatalf("pinning version 1 before it is retired: %v", err)
	}
	if _, err := f.d.Templates().RetireTemplateVersion(ctx, by, "notice", 2); !isField(err, "version") {
		t.Errorf("retiring the current version: %v, want an error naming version", err)
	}
	v, err := f.d.Templates().RetireTemplateVersion(ctx, by, "notice", 1)
	if err != nil {
		t.Fatal(err)
	}
	if v.RetiredAt == nil || v.RetiredBy != "ops1" {
		t.Errorf("retired version %+v", v)
	}
	if e := lastEntry(t, f.store, "template.version_retire"); e.Actor != "ops1" || e.ParamMap()["version"] != "1" {
		t.Errorf("audit entry %+v %v", e, e.ParamMap())
	}
	if err := send(1); !isField(err, "template_version") {
		t.Errorf("pinning a retired version: %v, want an error naming template_version", err)
	}
	if err := send(0); err != nil {
		t.Errorf("a send without a pin after the retirement: %v", err)
	}
	if _, err := f.d.Templates().RollbackTemplate(ctx, by, "notice", 1, false); !isField(err, "version") {
		t.Errorf("rollback to a retired version: %v, want an error naming version", err)
	}
	if _, err := f.d.Templates().RetireTemplateVersion(ctx, by, "notice", 1); !isField(err, "version") {
		t.Errorf("retiring a version twice: %v, want an error naming version", err)
	}
	if _, err := f.d.Templates().RetireTemplateVersion(ctx, by, "notice", 9); !isField(err, "version") {
		t.Errorf("retiring an unknown version: %v", err)
	}
	if _, err := f.d.Templates().RetireTemplateVersion(ctx, by, "nope", 1); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("retiring a version of an unknown template: %v", err)
	}
}
