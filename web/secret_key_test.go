package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"herald/access"
	"herald/models"
	"herald/sending"
)

// makeUnreadable gives an account settings that no key opens, as after
// HERALD_SECRET_KEY changed without HERALD_SECRET_KEY_PREVIOUS: a value sealed for
// another account.
func makeUnreadable(t *testing.T, c *console, name string) {
	t.Helper()
	ctx := context.Background()
	a := &sending.Account{Name: name, Platform: "tianyuan", Enabled: true, AllowPrivateNetwork: true,
		Config: map[string]string{"base_url": "http://127.0.0.1:9", "token": "lost-token"}}
	if err := c.store.Sending().CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	_, err := c.store.SQL().Exec("UPDATE accounts SET config_enc = (SELECT config_enc FROM (SELECT config_enc FROM accounts WHERE name = ?) AS other) WHERE id = ?",
		models.SandboxAccountName, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	c.accounts.Forget()
}

// An account whose settings cannot be decrypted is listed and shown flagged, /readyz
// names it, sending through it is refused naming the account, an update must give its
// secrets again and then repairs it, and it can be deleted.
func TestUnreadableAccountSettings(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	anon := c.as("")
	if resp, body := anon.get("/readyz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz before: %d %s", resp.StatusCode, body)
	}
	makeUnreadable(t, c, "ty-lost")
	makeUnreadable(t, c, "ty-gone")

	resp, body := anon.get("/readyz")
	wantStatus(t, "/readyz", resp, body, http.StatusServiceUnavailable)
	wantContains(t, "/readyz", body, `"database":"ok"`, "ty-gone, ty-lost")

	admin := c.as(adminUser)
	resp, body = admin.get("/accounts")
	wantStatus(t, "accounts page", resp, body, http.StatusOK)
	wantContains(t, "accounts page", body, "ty-lost", "settings unreadable: enter them again")
	resp, body = admin.get("/accounts/ty-lost/edit")
	wantStatus(t, "edit page", resp, body, http.StatusOK)
	wantContains(t, "edit page", body, "cannot be decrypted with HERALD_SECRET_KEY")

	_, key, err := c.store.Access().CreateAPIKey(ctx, "provisioning", access.ScopeAdmin+","+access.ScopeSend, adminUser)
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		Name              string         `json:"name"`
		SecretsUnreadable bool           `json:"secrets_unreadable"`
		Config            map[string]any `json:"config"`
	}
	if code := apiJSON(t, c, key, "GET", "/api/v1/accounts", "", &list); code != http.StatusOK {
		t.Fatalf("GET accounts: %d", code)
	}
	flagged := map[string]bool{}
	for _, a := range list {
		flagged[a.Name] = a.SecretsUnreadable
	}
	if !flagged["ty-lost"] || !flagged["ty-gone"] || flagged[models.SandboxAccountName] {
		t.Errorf("secrets_unreadable in the list: %v", flagged)
	}
	var one struct {
		SecretsUnreadable bool `json:"secrets_unreadable"`
	}
	if code := apiJSON(t, c, key, "GET", "/api/v1/accounts/ty-lost", "", &one); code != http.StatusOK || !one.SecretsUnreadable {
		t.Errorf("GET ty-lost: %d %+v", code, one)
	}

	var e struct {
		Error struct{ Code, Message, Field string }
	}
	code := apiJSON(t, c, key, "POST", "/api/v1/messages", `{"account":"ty-lost","recipients":["E1001"],"content":{"text":"hello"}}`, &e)
	if code != http.StatusUnprocessableEntity || e.Error.Field != "account" || !strings.Contains(e.Error.Message, "cannot be decrypted") {
		t.Errorf("send through ty-lost: %d %+v, want 422 naming account", code, e)
	}

	e.Error.Field, e.Error.Message = "", ""
	code = apiJSON(t, c, key, "PUT", "/api/v1/accounts/ty-lost",
		`{"platform":"tianyuan","allow_private_network":true,"config":{"base_url":"http://127.0.0.1:9"}}`, &e)
	if code != http.StatusUnprocessableEntity || e.Error.Field != "config.token" || !strings.Contains(e.Error.Message, "cannot be decrypted") {
		t.Errorf("PUT without the token: %d %+v, want 422 naming config.token", code, e)
	}
	var saved struct {
		SecretsUnreadable *bool `json:"secrets_unreadable"`
	}
	code = apiJSON(t, c, key, "PUT", "/api/v1/accounts/ty-lost",
		`{"platform":"tianyuan","allow_private_network":true,"config":{"base_url":"http://127.0.0.1:9","token":"new-token"}}`, &saved)
	if code != http.StatusOK || saved.SecretsUnreadable != nil {
		t.Errorf("PUT with the token: %d, secrets_unreadable %v", code, saved.SecretsUnreadable)
	}
	if a, err := c.store.Sending().AccountByName(ctx, "ty-lost"); err != nil || a.Unreadable || a.Config["token"] != "new-token" {
		t.Errorf("ty-lost after the PUT: %+v, %v", a, err)
	}
	if code := apiJSON(t, c, key, "DELETE", "/api/v1/accounts/ty-gone", "", nil); code != http.StatusNoContent {
		t.Errorf("DELETE ty-gone: %d", code)
	}
	if resp, body := anon.get("/readyz"); resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz once repaired: %d %s", resp.StatusCode, body)
	}
}
