package web_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"herald/access"
	"herald/kernel"
)

// The API keeps keys it authenticated for up to a second; a key revoked in the console
// of the same process is refused at once, one revoked by another process within that
// second.
func TestAPIRefusesRevokedKeys(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	api := c.as("")
	call := func(secret string) int {
		resp, _ := api.do("GET", "/api/v1/batches/none", "", nil, map[string]string{"Authorization": "Bearer " + secret})
		return resp.StatusCode
	}

	here, hereSecret, err := c.store.Access().CreateAPIKey(ctx, "erp", access.ScopeRead, adminUser)
	if err != nil {
		t.Fatal(err)
	}
	if status := call(hereSecret); status != http.StatusNotFound {
		t.Fatalf("a live key: %d, want 404 (authenticated, no such batch)", status)
	}
	resp, body := c.as(adminUser).post(fmt.Sprintf("/api-keys/%d/revoke", here.ID), nil)
	wantRedirect(t, "revoke", resp, body, "/api-keys")
	if status := call(hereSecret); status != http.StatusUnauthorized {
		t.Errorf("a key revoked in the console: %d, want 401 at once", status)
	}

	there, thereSecret, err := c.store.Access().CreateAPIKey(ctx, "crm", access.ScopeRead, adminUser)
	if err != nil {
		t.Fatal(err)
	}
	if status := call(thereSecret); status != http.StatusNotFound {
		t.Fatalf("a live key: %d, want 404 (authenticated, no such batch)", status)
	}
	// Revoked by another process: only the database knows.
	revokedAt := time.Now()
	if _, err := c.store.SQL().ExecContext(ctx, "UPDATE api_keys SET revoked_at = ? WHERE id = ?", kernel.Now(), there.ID); err != nil {
		t.Fatal(err)
	}
	for call(thereSecret) != http.StatusUnauthorized {
		if time.Since(revokedAt) > 3*access.APIKeyCacheTTL {
			t.Fatalf("a key revoked elsewhere is still accepted %s later, want 401 within %s",
				time.Since(revokedAt).Round(time.Millisecond), access.APIKeyCacheTTL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if took := time.Since(revokedAt); took > access.APIKeyCacheTTL+500*time.Millisecond {
		t.Errorf("a key revoked elsewhere was refused after %s, want within %s", took.Round(time.Millisecond), access.APIKeyCacheTTL)
	}
}
