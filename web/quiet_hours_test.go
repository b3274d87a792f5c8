package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
)

// The account form sets quiet hours, names a bad time beside its field and keeps what
// was typed; the edit form shows the stored window.
func TestAccountFormQuietHours(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	admin := c.as(adminUser)
	form := url.Values{"name": {"night-quiet"}, "platform": {"sandbox"}, "enabled": {"true"},
		"quiet_hours.start": {"25:00"}, "quiet_hours.end": {"08:00"}}
	resp, body := admin.post("/accounts", form)
	wantStatus(t, "bad start", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "quiet_hours.start", "must be a time of day as HH:MM")
	wantContains(t, "form keeps input", body, `value="25:00"`, `value="08:00"`)

	form.Set("quiet_hours.start", "20:00")
	resp, body = admin.post("/accounts", form)
	wantRedirect(t, "create", resp, body, "/accounts")
	a, err := c.store.AccountByName(context.Background(), "night-quiet")
	if err != nil || a.QuietHours.Start != "20:00" || a.QuietHours.End != "08:00" {
		t.Fatalf("stored %+v, %v; want quiet hours 20:00–08:00", a, err)
	}
	_, body = admin.get("/accounts/night-quiet/edit")
	wantContains(t, "edit form", body, `name="quiet_hours.start" value="20:00"`, `name="quiet_hours.end" value="08:00"`)
}
