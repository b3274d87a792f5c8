package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The API key form sets a recipient cap and a last day; bad values are named beside
// their fields and nothing is created; the list shows the limits.
func TestAPIKeyFormLimits(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	admin := c.as(adminUser)
	for _, bad := range []struct{ field, value, message string }{
		{"max_recipients_per_request", "-3", "must be a whole number from 0 (no cap) to 10000"},
		{"expires", "2020-01-01", "must be today or later"},
	} {
		resp, body := admin.post("/api-keys", url.Values{"name": {"capped"}, "scopes": {"send"}, bad.field: {bad.value}})
		wantStatus(t, bad.field, resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, bad.field, bad.message)
		wantContains(t, "form keeps input", body, `value="`+bad.value+`"`)
	}
	if keys, err := c.store.Access().APIKeys(context.Background()); err != nil || len(keys) != 0 {
		t.Fatalf("refused forms created keys: %v %v", keys, err)
	}
	resp, body := admin.post("/api-keys", url.Values{"name": {"capped"}, "scopes": {"send"},
		"max_recipients_per_request": {"50"}, "expires": {"2099-06-30"}})
	wantStatus(t, "create", resp, body, http.StatusCreated)
	keys, err := c.store.Access().APIKeys(context.Background())
	if err != nil || len(keys) != 1 || keys[0].MaxRecipientsPerRequest != 50 || keys[0].ExpiresAt == nil ||
		keys[0].Expired(time.Date(2099, 6, 30, 12, 0, 0, 0, time.UTC)) || !keys[0].Expired(time.Date(2099, 7, 2, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("stored %+v, %v; want a cap of 50, working through 2099-06-30", keys, err)
	}
	_, body = admin.get("/api-keys")
	wantContains(t, "key list", body, "at most 50 recipients a request", "works until")
	if a := c.lastAudit("apikey.create"); a.ParamMap()["max_recipients"] != "50" || !strings.HasPrefix(a.ParamMap()["expires"], "2099-") {
		t.Errorf("audit %+v %v, want the limits in its values", a, a.ParamMap())
	}
}
