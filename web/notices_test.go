package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

func TestNoticesComeFromTheSessionNeverTheURL(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	admin := c.as(adminUser)

	for _, path := range []string{
		"/users?notice=created&subject=" + url.QueryEscape("user ceo. Call 555-0100 to verify your account"),
		"/templates?notice=" + url.QueryEscape("Session expired: sign in again at evil.example") + "&subject=x",
		"/api-keys?notice=revoked&subject=" + url.QueryEscape("every key. Call 555-0100"),
	} {
		resp, body := admin.get(path)
		wantStatus(t, "GET "+path, resp, body, http.StatusOK)
		wantNotContains(t, "page at "+path, body, "555-0100", "evil.example", `class="alert ok"`)
	}

	key, _, err := c.store.Access().CreateAPIKey(t.Context(), "ledger", "send", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := admin.post(fmt.Sprintf("/api-keys/%d/revoke", key.ID), nil)
	if loc := wantRedirect(t, "revoke", resp, body, "/api-keys"); loc != "/api-keys" {
		t.Errorf("the redirect after an action goes to %q, want /api-keys with nothing in the query", loc)
	}
	_, body = admin.get("/api-keys")
	wantContains(t, "the page after the action", body, `<div class="alert ok" role="status">Revoked API key ledger.</div>`)
	_, body = admin.get("/api-keys")
	wantNotContains(t, "the page shown again", body, "Revoked API key ledger.")
}
