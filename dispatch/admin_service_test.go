package dispatch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"herald/access"
	"herald/audit"
	"herald/kernel"
	"herald/models"
	"herald/sending"
)

// wantField checks that err is a *kernel.FieldError naming field.
func wantField(t *testing.T, err error, field string) {
	t.Helper()
	var fe *kernel.FieldError
	if !errors.As(err, &fe) || fe.Field != field {
		t.Fatalf("got %v, want an error naming %s", err, field)
	}
}

// oneEntry returns the one audit entry of an action, failing when there is not exactly one.
func oneEntry(t *testing.T, s *models.Store, action string) audit.Entry {
	t.Helper()
	entries, err := s.AuditLog().List(context.Background(), audit.Filter{Action: action}, 10)
	if err != nil || len(entries) != 1 {
		t.Fatalf("%s: audit entries %+v, %v; want one", action, entries, err)
	}
	return entries[0]
}

var admin = audit.Actor{Name: "root", Type: audit.ActorUser, Person: "root", IP: "192.0.2.9"}

func TestAccountService(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	ctx := context.Background()
	good := sending.AccountInput{Name: "ty-main", Platform: "tianyuan",
		Config: map[string]string{"base_url": "https://im.example.com/api", "token": "secret-token"}}

	for _, tc := range []struct {
		name  string
		in    sending.AccountInput
		field string
	}{
		{"no name", sending.AccountInput{Platform: "tianyuan", Config: good.Config}, "name"},
		{"unknown platform", sending.AccountInput{Name: "x", Platform: "pigeon"}, "platform"},
		{"address not http", sending.AccountInput{Name: "x", Platform: "tianyuan",
			Config: map[string]string{"base_url": "ftp://im.example.com", "token": "t"}}, "config.base_url"},
		{"too many attempts", sending.AccountInput{Name: "x", Platform: "tianyuan", Config: good.Config, MaxAttempts: 99}, "max_attempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.d.Sending().SaveAccount(ctx, admin, nil, tc.in)
			wantField(t, err, tc.field)
			if _, err := f.store.Sending().AccountByName(ctx, tc.in.Name); tc.in.Name != "" && !errors.Is(err, kernel.ErrNotFound) {
				t.Errorf("a refused account was stored: %v", err)
			}
			if n := auditCount(t, f.store, "account."); n != 0 {
				t.Errorf("a refused change wrote %d audit entries", n)
			}
		})
	}

	a, err := f.d.Sending().SaveAccount(ctx, admin, nil, good)
	if err != nil {
		t.Fatal(err)
	}
	e := oneEntry(t, f.store, "account.create")
	if e.Actor != "root" || e.IP != "192.0.2.9" || e.TargetID != "ty-main" || !strings.HasPrefix(e.ParamMap()["destination"], "base_url https://im.example.com/api") {
		t.Errorf("create entry %+v %v", e, e.ParamMap())
	}

	limits := a.Limits
	limits.PerMinute = 7
	moved := sending.AccountInput{Name: "ty-main", Config: map[string]string{"base_url": "https://im2.example.com/api", "token": "new"},
		Limits: &limits}
	if _, err := f.d.Sending().SaveAccount(ctx, admin, a, moved); err != nil {
		t.Fatal(err)
	}
	p := oneEntry(t, f.store, "account.update").ParamMap()
	if p["destination"] != "base_url https://im.example.com/api → https://im2.example.com/api" || p["secrets_entered"] != "token" ||
		p["limits"] == "" {
		t.Errorf("update params %v, want the old and new address, the token entered and the limit changed", p)
	}

	stored, err := f.store.Sending().AccountByName(ctx, "ty-main")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.d.Sending().SetAccountEnabled(ctx, admin, stored, false); err != nil {
		t.Fatal(err)
	}
	oneEntry(t, f.store, "account.disable")
	if err := f.d.Sending().DeleteAccount(ctx, admin, stored); err != nil {
		t.Fatal(err)
	}
	if oneEntry(t, f.store, "account.delete").ParamMap()["platform"] != "tianyuan" {
		t.Error("the delete entry does not name the platform")
	}
	if err := f.d.Sending().DeleteAccount(ctx, admin, stored); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("deleting it again: %v", err)
	}
	if n := auditCount(t, f.store, "account.delete"); n != 1 {
		t.Errorf("%d delete entries, want 1", n)
	}
}

func TestUserService(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	ctx := context.Background()
	const password = "staple-battery-horse-42"

	for _, tc := range []struct {
		name, username, password string
		role                     access.Role
		field                    string
	}{
		{"bad username", "a b", password, access.RoleViewer, "username"},
		{"weak password", "vera", "password1", access.RoleViewer, "password"},
		{"unknown role", "vera", password, "root", "role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.d.Access().CreateUser(ctx, admin, tc.username, tc.password, tc.role)
			wantField(t, err, tc.field)
			if n, _ := f.store.Access().CountUsers(ctx); n != 0 {
				t.Errorf("%d users after a refused create", n)
			}
			if n := auditCount(t, f.store, "user."); n != 0 {
				t.Errorf("a refused change wrote %d audit entries", n)
			}
		})
	}

	u, err := f.d.Access().CreateUser(ctx, admin, "Vera", password, access.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	if e := oneEntry(t, f.store, "user.create"); e.TargetID != "vera" || e.ParamMap()["role"] != "viewer" {
		t.Errorf("create entry %+v %v", e, e.ParamMap())
	}
	if _, err := f.d.Access().CreateUser(ctx, admin, "vera", password, access.RoleViewer); err == nil {
		t.Error("a second user named vera was created")
	}

	wantField(t, f.d.Access().SetUserRole(ctx, admin, u, "root"), "role")
	if n := auditCount(t, f.store, "user.role"); n != 0 {
		t.Errorf("a refused role change wrote %d entries", n)
	}
	if err := f.d.Access().SetUserRole(ctx, admin, u, access.RoleOperator); err != nil {
		t.Fatal(err)
	}
	if p := oneEntry(t, f.store, "user.role").ParamMap(); p["old_role"] != "viewer" || p["role"] != "operator" {
		t.Errorf("role params %v", p)
	}

	wantField(t, f.d.Access().SetUserLanguage(ctx, admin, u, "fr"), "language")
	if err := f.d.Access().SetUserLanguage(ctx, admin, u, "zh-CN"); err != nil {
		t.Fatal(err)
	}
	if p := oneEntry(t, f.store, "user.language").ParamMap(); p["old_language"] != "-" || p["language"] != "zh-CN" {
		t.Errorf("language params %v", p)
	}

	wantField(t, f.d.Access().ResetPassword(ctx, admin, u, "short"), "password")
	if n := auditCount(t, f.store, "user.password_reset"); n != 0 {
		t.Errorf("a refused reset wrote %d entries", n)
	}

	// Changing one's own password: a wrong current one is recorded as a failed attempt;
	// a weak new one writes nothing.
	self := audit.Actor{Name: "vera", Type: audit.ActorUser, Person: "vera", IP: "192.0.2.10"}
	u, _ = f.store.Access().UserByID(ctx, u.ID)
	wantField(t, f.d.Access().ChangePassword(ctx, self, u, "not-it", "another-staple-battery-7"), "current_password")
	if e := oneEntry(t, f.store, "user.password_change_failed"); e.Actor != "vera" || e.IP != "192.0.2.10" {
		t.Errorf("failed attempt entry %+v", e)
	}
	wantField(t, f.d.Access().ChangePassword(ctx, self, u, password, "weak"), "new_password")
	if err := f.d.Access().ChangePassword(ctx, self, u, password, "another-staple-battery-7"); err != nil {
		t.Fatal(err)
	}
	oneEntry(t, f.store, "user.password_change")
	if _, err := f.store.Access().Authenticate(ctx, "vera", "another-staple-battery-7", "192.0.2.11"); err != nil {
		t.Errorf("the new password does not sign in: %v", err)
	}

	if err := f.d.Access().SetUserDisabled(ctx, admin, u, true); err != nil {
		t.Fatal(err)
	}
	oneEntry(t, f.store, "user.disable")
}

func TestAPIKeyService(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	ctx := context.Background()

	for _, tc := range []struct {
		name  string
		in    access.APIKeyInput
		field string
	}{
		{"no name", access.APIKeyInput{Scopes: "send"}, "name"},
		{"unknown scope", access.APIKeyInput{Name: "erp", Scopes: "send,root"}, "scopes"},
		{"no scope", access.APIKeyInput{Name: "erp"}, "scopes"},
		{"bad expiry", access.APIKeyInput{Name: "erp", Scopes: "send", Expires: "next week"}, "expires"},
		{"private callback", access.APIKeyInput{Name: "erp", Scopes: "send",
			Callback: &access.CallbackSetting{URL: "http://127.0.0.1:9/events"}}, "url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := f.d.Access().CreateAPIKey(ctx, admin, tc.in)
			wantField(t, err, tc.field)
			if keys, _ := f.store.Access().APIKeys(ctx); len(keys) != 1 { // the fixture's own
				t.Errorf("%d keys after a refused create", len(keys))
			}
			if n := auditCount(t, f.store, "apikey."); n != 0 {
				t.Errorf("a refused change wrote %d audit entries", n)
			}
		})
	}

	k, secret, err := f.d.Access().CreateAPIKey(ctx, admin, access.APIKeyInput{Name: "erp", Scopes: "read,send", MaxRecipients: "50",
		Callback: &access.CallbackSetting{URL: "https://crm.example/events"}})
	if err != nil {
		t.Fatal(err)
	}
	if k.CreatedBy != "root" || secret == "" || k.CallbackURL != "https://crm.example/events" {
		t.Errorf("key %+v", k)
	}
	p := oneEntry(t, f.store, "apikey.create").ParamMap()
	if p["scopes"] != "read,send" || p["max_recipients"] != "50" || p["prefix"] != "hk_"+k.Prefix {
		t.Errorf("create params %v", p)
	}

	wantField(t, f.d.Access().SetCallback(ctx, admin, k, &access.CallbackSetting{URL: "gopher://crm.example"}), "url")
	if err := f.d.Access().SetCallback(ctx, admin, k, &access.CallbackSetting{URL: "https://crm2.example/events"}); err != nil {
		t.Fatal(err)
	}
	if p := oneEntry(t, f.store, "apikey.callback.set").ParamMap(); p["url"] != "https://crm2.example/events" || p["old_url"] != "https://crm.example/events" {
		t.Errorf("callback params %v", p)
	}

	if err := f.d.Access().RevokeAPIKey(ctx, admin, k); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Access().RevokeAPIKey(ctx, admin, k); !errors.Is(err, kernel.ErrStateChanged) {
		t.Errorf("revoking twice: %v", err)
	}
	oneEntry(t, f.store, "apikey.revoke")
	if err := f.d.Access().SetCallback(ctx, admin, k, &access.CallbackSetting{URL: ""}); !errors.Is(err, kernel.ErrStateChanged) {
		t.Errorf("the callback of a revoked key: %v", err)
	}
	if n := auditCount(t, f.store, "apikey.callback.remove"); n != 0 {
		t.Errorf("a refused callback change wrote %d entries", n)
	}
}

func TestMessageService(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	ctx := context.Background()
	res, err := f.d.Submit(ctx, f.request("", "Ledger 42"))
	if err != nil {
		t.Fatal(err)
	}
	id := res.Messages[0].ID
	other := audit.Actor{Name: "apikey:crm", Type: audit.ActorAPIKey, APIKeyID: f.keyID + 100, OwnOnly: true}
	own := audit.Actor{Name: "apikey:intake", Type: audit.ActorAPIKey, APIKeyID: f.keyID, OwnOnly: true}

	for _, tc := range []struct {
		name string
		do   func() error
		want error
	}{
		{"another key cancels", func() error { _, err := f.d.Messages().CancelMessage(ctx, other, id); return err }, kernel.ErrNotFound},
		{"another key retries", func() error { _, err := f.d.Messages().RetryMessage(ctx, other, id); return err }, kernel.ErrNotFound},
		{"another key reads", func() error { _, err := f.d.Messages().Message(ctx, other, id); return err }, kernel.ErrNotFound},
		{"another key reads the batch", func() error {
			_, err := f.d.Messages().Batch(ctx, other, res.Batch.ID)
			return err
		}, kernel.ErrNotFound},
		{"a pending message retried", func() error { _, err := f.d.Messages().RetryMessage(ctx, own, id); return err }, kernel.ErrStateChanged},
		{"no such message", func() error { _, err := f.d.Messages().CancelMessage(ctx, admin, "nope"); return err }, kernel.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if n := auditCount(t, f.store, "message."); n != 0 {
				t.Errorf("a refused change wrote %d audit entries", n)
			}
			if m, _ := f.store.MessageByID(ctx, id); m.Status != models.StatusPending {
				t.Errorf("the message is %s", m.Status)
			}
		})
	}
	if rows, err := f.d.Messages().Messages(ctx, other, models.MessageFilter{}, nil, 10); err != nil || len(rows) != 0 {
		t.Errorf("another key lists %d messages (%v)", len(rows), err)
	}
	if rows, err := f.d.Messages().Messages(ctx, own, models.MessageFilter{}, nil, 10); err != nil || len(rows) != 1 {
		t.Errorf("its own key lists %d messages (%v)", len(rows), err)
	}

	if _, err := f.d.Messages().CancelMessage(ctx, own, id); err != nil {
		t.Fatal(err)
	}
	e := oneEntry(t, f.store, "message.cancel")
	if e.Actor != "apikey:intake" || e.TargetID != id || e.ParamMap()["old_status"] != "pending" {
		t.Errorf("cancel entry %+v %v", e, e.ParamMap())
	}

	stopped := f.send(t, "E2001", "E2002")
	for _, id := range stopped {
		f.stop(t, id)
	}
	got, err := f.d.Messages().ResendStopped(ctx, admin, models.MessageFilter{}, 100)
	if err != nil || got.Retried != 2 {
		t.Fatalf("re-sent %+v, %v", got, err)
	}
	if p := oneEntry(t, f.store, "messages.resend").ParamMap(); p["resent"] != "2" {
		t.Errorf("resend params %v", p)
	}
}
