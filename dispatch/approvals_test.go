package dispatch_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"herald/access"
	"herald/audit"
	"herald/directory"
	"herald/dispatch"
	"herald/internal/testenv"
	"herald/models"
	"herald/sending"
	"herald/templates"
)

// approvalFixture is an intake fixture with approvals on above one person.
func approvalFixture(t *testing.T) *intakeFixture {
	t.Helper()
	f := newIntakeFixture(t)
	if err := f.store.Intake().SetApprovalThreshold(context.Background(), 1, "test"); err != nil {
		t.Fatal(err)
	}
	f.d.ForgetThreshold()
	return f
}

// apiKeyOf makes an API key created by person, and the actor it is on a request.
func apiKeyOf(t *testing.T, f *intakeFixture, name, person string) (*access.APIKey, audit.Actor) {
	t.Helper()
	k, _, err := f.store.Access().CreateAPIKey(context.Background(), name, "send,read,admin", person)
	if err != nil {
		t.Fatal(err)
	}
	return k, audit.Actor{Name: "apikey:" + name, Type: audit.ActorAPIKey, Person: person, APIKeyID: k.ID}
}

func user(name string) audit.Actor {
	return audit.Actor{Name: name, Type: audit.ActorUser, Person: name}
}

// The maker of a batch is a person: whoever composed it in the console, or created the
// API key that sent it, may not approve or reject it, in the console or through any of
// their API keys; someone else may.
func TestApprovalMakerIsAPerson(t *testing.T) {
	t.Parallel()
	f := approvalFixture(t)
	ctx := context.Background()
	_, adaKey := apiKeyOf(t, f, "ada-one", "ada")
	_, adaOther := apiKeyOf(t, f, "ada-two", "ada")
	_, bobKey := apiKeyOf(t, f, "bob-one", "bob")

	submit := func(req dispatch.Request) *models.Batch {
		t.Helper()
		req.Platform, req.Recipients, req.Text = "sandbox", []string{"E2001", "E2002"}, "two people"
		res, err := f.d.Submit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Batch.Approval != models.ApprovalAwaiting {
			t.Fatalf("batch %s, want awaiting approval", res.Batch.Approval)
		}
		return res.Batch
	}
	console := submit(dispatch.Request{Source: "console", Actor: "ada", Makers: []string{"ada"}})
	api := submit(dispatch.Request{Source: "api", Actor: adaKey.Name, APIKeyID: &adaKey.APIKeyID, Makers: []string{"ada"}})
	// A batch recorded before its makers were: the key's creator is its maker.
	legacy := submit(dispatch.Request{Source: "api", Actor: adaKey.Name, APIKeyID: &adaKey.APIKeyID})
	legacyConsole := submit(dispatch.Request{Source: "console", Actor: "ada"})

	for _, b := range []*models.Batch{console, api, legacy, legacyConsole} {
		for _, by := range []audit.Actor{user("ada"), adaKey, adaOther} {
			if err := f.d.Approve(ctx, by, b); !errors.Is(err, dispatch.ErrOwnBatch) {
				t.Errorf("%s approving batch %s by %s (%v): %v, want ErrOwnBatch", by.Name, b.Source, b.Actor, b.Makers, err)
			}
			if _, err := f.d.Reject(ctx, by, b, "no"); !errors.Is(err, dispatch.ErrOwnBatch) {
				t.Errorf("%s rejecting batch %s by %s (%v): %v, want ErrOwnBatch", by.Name, b.Source, b.Actor, b.Makers, err)
			}
		}
	}
	if err := f.d.Approve(ctx, bobKey, console); err != nil {
		t.Errorf("bob's key approving ada's batch: %v", err)
	}
	if err := f.d.Approve(ctx, user("bob"), api); err != nil {
		t.Errorf("bob approving the batch of ada's key: %v", err)
	}
	a := lastEntry(t, f.store, "batch.approve")
	if a.Actor != "bob" || a.TargetID != api.ID || a.ParamMap()["released"] != "2" {
		t.Errorf("approval's audit entry %+v %v", a, a.ParamMap())
	}
}

// The maker of a duty reminder's batch is whoever last set up the reminder and whoever
// last wrote its template: one operator who writes the text, puts people on duty and
// sets the reminder to now cannot approve what it sends.
func TestReminderBatchHasMakers(t *testing.T) {
	t.Parallel()
	f := approvalFixture(t)
	ctx := context.Background()
	loc, _ := time.LoadLocation("Asia/Shanghai")
	dispatch.SetLocation(f.d, loc)
	now := time.Date(2026, 11, 25, 17, 1, 0, 0, loc) // Thursday's roster has two people
	dispatch.SetClock(f.d, func() time.Time { return now })
	tmpl := &templates.Template{Name: "on-duty", MsgType: "text", Body: "Pay {{.date}} to account 42", Variables: templates.StringList{"date"}}
	if err := f.store.Templates().CreateTemplate(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	_, olgaKey := apiKeyOf(t, f, "olga-key", "olga")
	// olga wrote the template through her API key; otto set the reminder in the console.
	for _, e := range []audit.Entry{
		{Actor: "someone", ActorType: "user", Action: "template.create", TargetType: "template", TargetID: "on-duty"},
		{Actor: olgaKey.Name, ActorType: "api_key", Action: "template.update", TargetType: "template", TargetID: "on-duty"},
		{Actor: "ada", ActorType: "user", Action: "template.update", TargetType: "template", TargetID: "other"},
	} {
		if err := f.store.AuditLog().Write(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	cfg := models.ReminderConfig{Enabled: true, Time: "17:00", Account: models.SandboxAccountName, Template: "on-duty"}
	if err := f.d.SetDutyReminder(ctx, audit.Actor{Name: "otto", Type: audit.ActorUser, Person: "otto"}, cfg); err != nil {
		t.Fatal(err)
	}
	res, err := f.d.RemindIfDue(ctx)
	if err != nil || res == nil {
		t.Fatalf("reminder: %+v, %v", res, err)
	}
	b := res.Batch
	if b.Approval != models.ApprovalAwaiting {
		t.Fatalf("reminder batch %q for %d people, want awaiting approval", b.Approval, b.Accepted)
	}
	stored, err := f.store.BatchByID(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := (templates.StringList{"otto", "olga"}); !slices.Equal(stored.Makers, want) {
		t.Errorf("reminder batch makers %v, want %v", stored.Makers, want)
	}
	for _, by := range []audit.Actor{user("otto"), user("olga"), olgaKey} {
		if err := f.d.Approve(ctx, by, stored); !errors.Is(err, dispatch.ErrOwnBatch) {
			t.Errorf("%s approving the reminder they set up: %v, want ErrOwnBatch", by.Name, err)
		}
	}
	if err := f.d.Approve(ctx, user("ada"), stored); err != nil {
		t.Errorf("ada approving the reminder: %v", err)
	}
}

// Fallback messages go out with the content the batch was created and approved with:
// the template edited while the batch waits changes nothing of what it sends.
func TestFallbackRendersApprovedContent(t *testing.T) {
	t.Parallel()
	f := approvalFixture(t)
	ctx := context.Background()
	for _, a := range []*sending.Account{
		{Name: "ty", Platform: "tianyuan", IsDefault: true, Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3, Healthy: true,
			Config: map[string]string{"base_url": "http://127.0.0.1:1/tianyuan", "path": "/messages", "token": "t0ken"}},
		{Name: "zh", Platform: "zhaohu", IsDefault: true, Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3, Healthy: true,
			Config: map[string]string{"base_url": "http://127.0.0.1:1/zhaohu", "path": "/messages", "token": "t0ken"}},
	} {
		if err := f.store.Sending().SaveAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	people := []directory.Recipient{
		{ExternalID: "FB1", Name: "One", OrgType: directory.Branch, ZhaohuID: "zh1", Active: true},
		{ExternalID: "FB2", Name: "Two", OrgType: directory.Branch, ZhaohuID: "zh2", Active: true},
	}
	if _, err := f.store.Directory().UpsertRecipients(ctx, people); err != nil {
		t.Fatal(err)
	}
	tmpl := &templates.Template{Name: "pay", MsgType: "text", Body: "Approved: pay {{.amount}}", Variables: templates.StringList{"amount"}, Fallback: "zhaohu"}
	if err := f.store.Templates().CreateTemplate(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	res, err := f.d.Submit(ctx, dispatch.Request{Source: "console", Actor: "ada", Makers: []string{"ada"}, Platform: "tianyuan",
		Recipients: []string{"FB1", "FB2"}, Template: "pay", Variables: map[string]string{"amount": "100"}})
	if err != nil {
		t.Fatal(err)
	}
	edited := *tmpl
	edited.Body = "Edited: pay {{.amount}} to account 666"
	if err := f.store.Templates().UpdateTemplate(ctx, "pay", &edited); err != nil {
		t.Fatal(err)
	}
	b, err := f.store.BatchByID(ctx, res.Batch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.d.Approve(ctx, user("bob"), b); err != nil {
		t.Fatal(err)
	}
	// The approval moves the chains on in the background; a pass here does the rest.
	if _, err := f.d.FallBack(ctx); err != nil {
		t.Fatal(err)
	}
	var msgs []models.BatchMessage
	testenv.WaitFor(t, 5*time.Second, "both fallback messages made", func() bool {
		msgs, err = f.store.MessagesOfBatch(ctx, b.ID, 10)
		return err == nil && len(msgs) == 4
	})
	made := 0
	for _, m := range msgs {
		if m.Platform != "zhaohu" {
			continue
		}
		made++
		if m.Content != "Approved: pay 100" {
			t.Errorf("fallback message to %s says %q, want the approved text", m.Address, m.Content)
		}
	}
	if made != 2 {
		t.Errorf("%d fallback messages, want 2", made)
	}
}
