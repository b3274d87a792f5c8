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
	a, err := c.store.Sending().AccountByName(context.Background(), "night-quiet")
	if err != nil || a.QuietHours.Start != "20:00" || a.QuietHours.End != "08:00" {
		t.Fatalf("stored %+v, %v; want quiet hours 20:00–08:00", a, err)
	}
	_, body = admin.get("/accounts/night-quiet/edit")
	wantContains(t, "edit form", body, `name="quiet_hours.start" value="20:00"`, `name="quiet_hours.end" value="08:00"`)
}

// Quiet hours through the API: validated by field, shown on reads, cleared when an
// update leaves them out (an update replaces the whole account).
func TestAccountQuietHoursThroughTheAPI(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	api := c.apiKey("test-admin", "admin")
	base := `{"name":"quiet","platform":"sandbox"`
	for _, bad := range []struct{ body, field string }{
		{base + `,"quiet_hours":{"start":"25:00","end":"08:00"}}`, "quiet_hours.start"},
		{base + `,"quiet_hours":{"start":"20:00","end":"20:00"}}`, "quiet_hours.end"},
		{base + `,"quiet_hours":{"start":"20:00"}}`, "quiet_hours.end"},
	} {
		if status, body, _ := api.call("POST", "/api/v1/accounts", bad.body); status != 422 || errorField(body) != bad.field {
			t.Errorf("%s: %d %s, want 422 naming %s", bad.body, status, body["_raw"], bad.field)
		}
	}
	status, body, _ := api.call("POST", "/api/v1/accounts", base+`,"quiet_hours":{"start":"20:00","end":"08:00"}}`)
	if q, _ := body["quiet_hours"].(map[string]any); status != 201 || q["start"] != "20:00" || q["end"] != "08:00" {
		t.Fatalf("create with quiet hours: %d %s", status, body["_raw"])
	}
	stored, err := c.store.Sending().AccountByName(context.Background(), "quiet")
	if err != nil || stored.QuietHours.Start != "20:00" || stored.QuietHours.End != "08:00" {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	status, body, _ = api.call("PUT", "/api/v1/accounts/quiet", `{"platform":"sandbox"}`)
	if _, has := body["quiet_hours"]; status != 200 || has {
		t.Errorf("update without quiet hours: %d %s, want them cleared", status, body["_raw"])
	}
}
