package main

import (
	"context"
	"herald/access"
	"strings"
	"testing"
	"time"
)

// Per-key limits: a cap on the people one request reaches (named or in a group) is a 422
// naming recipients; a key past its last day is refused with key_expired; both are set
// by `herald apikey create` flags.
func TestAPIKeyCapsAndExpiry(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	h := startHerald(t, env) // first, so that it seeds the demo staff and sandbox account
	code, out, stderr := runHerald(t, env, "", "apikey", "create", "--name", "capped", "--scopes", "send",
		"--max-recipients", "2", "--expires", "2099-12-31")
	if code != 0 {
		t.Fatalf("apikey create with limits: %d %s", code, stderr)
	}
	for _, bad := range []struct{ flag, value, field string }{
		{"--max-recipients", "lots", "max_recipients_per_request"},
		{"--max-recipients", "10001", "max_recipients_per_request"},
		{"--expires", "2020-01-01", "expires"},
		{"--expires", "31/12/2099", "expires"},
	} {
		if code, _, stderr := runHerald(t, env, "", "apikey", "create", "--name", "bad", bad.flag, bad.value); code != 1 || !strings.Contains(stderr, bad.field) {
			t.Errorf("%s %s: exit %d, %q; want an error naming %s", bad.flag, bad.value, code, stderr, bad.field)
		}
	}
	ctx := context.Background()
	capped := &apiClient{T: t, Base: h.URL, Key: strings.TrimSpace(out)}
	k, err := h.App.Store.Access().AuthenticateAPIKey(ctx, capped.Key)
	if err != nil || k.MaxRecipientsPerRequest != 2 || k.ExpiresAt == nil {
		t.Fatalf("stored key %+v, %v; want a cap of 2 and an expiry", k, err)
	}
	if last := k.ExpiresAt.In(h.App.Config.Location).Add(-time.Nanosecond).Format(time.DateOnly); last != "2099-12-31" {
		t.Errorf("the key works until %s, want 2099-12-31 in HERALD_TIMEZONE", last)
	}

	send := `{"platform":"sandbox","recipients":[%s],"content":{"text":"cap"}}`
	if status, body, _ := capped.Call("POST", "/api/v1/messages", strings.Replace(send, "%s", `"E2001","E2002"`, 1)); status != 202 {
		t.Errorf("2 recipients under a cap of 2: %d %s", status, body["_raw"])
	}
	if status, body, _ := capped.Call("POST", "/api/v1/messages", strings.Replace(send, "%s", `"E2001","E2002","E2003"`, 1)); status != 422 || errorField(body) != "recipients" {
		t.Errorf("3 recipients over a cap of 2: %d %s, want 422 naming recipients", status, body["_raw"])
	}
	// A branch of two people and one more named: three reached.
	if status, body, _ := capped.Call("POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2002"],"branches":["Pudong Branch"],"content":{"text":"cap"}}`); status != 422 || errorField(body) != "recipients" {
		t.Errorf("a branch taking the request over the cap: %d %s, want 422 naming recipients", status, body["_raw"])
	}

	past := time.Now().Add(-time.Hour)
	_, secret, err := h.App.Store.Access().CreateLimitedAPIKey(ctx, "old", "send", "test", access.KeyLimits{ExpiresAt: &past})
	if err != nil {
		t.Fatal(err)
	}
	expired := &apiClient{T: t, Base: h.URL, Key: secret}
	status, body, _ := expired.Call("POST", "/api/v1/messages", strings.Replace(send, "%s", `"E2001"`, 1))
	if e, _ := body["error"].(map[string]any); status != 401 || e["code"] != "key_expired" {
		t.Errorf("an expired key: %d %s, want 401 key_expired", status, body["_raw"])
	}
}
