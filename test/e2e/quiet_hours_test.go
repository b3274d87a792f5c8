package main

import (
	"context"
	"testing"
)

// Quiet hours through the API: validated by field, shown on reads, cleared when an
// update leaves them out (an update replaces the whole account).
func TestAccountQuietHoursThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := startHerald(t, testEnv(t))
	api := newAPIKey(t, h, "admin")
	base := `{"name":"quiet","platform":"sandbox"`
	for _, bad := range []struct{ body, field string }{
		{base + `,"quiet_hours":{"start":"25:00","end":"08:00"}}`, "quiet_hours.start"},
		{base + `,"quiet_hours":{"start":"20:00","end":"20:00"}}`, "quiet_hours.end"},
		{base + `,"quiet_hours":{"start":"20:00"}}`, "quiet_hours.end"},
	} {
		if status, body, _ := api.Call("POST", "/api/v1/accounts", bad.body); status != 422 || errorField(body) != bad.field {
			t.Errorf("%s: %d %s, want 422 naming %s", bad.body, status, body["_raw"], bad.field)
		}
	}
	status, body, _ := api.Call("POST", "/api/v1/accounts", base+`,"quiet_hours":{"start":"20:00","end":"08:00"}}`)
	if q, _ := body["quiet_hours"].(map[string]any); status != 201 || q["start"] != "20:00" || q["end"] != "08:00" {
		t.Fatalf("create with quiet hours: %d %s", status, body["_raw"])
	}
	stored, err := h.App.Store.AccountByName(context.Background(), "quiet")
	if err != nil || stored.QuietHours.Start != "20:00" || stored.QuietHours.End != "08:00" {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	status, body, _ = api.Call("PUT", "/api/v1/accounts/quiet", `{"platform":"sandbox"}`)
	if _, has := body["quiet_hours"]; status != 200 || has {
		t.Errorf("update without quiet hours: %d %s, want them cleared", status, body["_raw"])
	}
}
