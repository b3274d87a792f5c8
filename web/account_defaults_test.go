package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"herald/models"
)

// TestNewAccountsStartFromPlatformLimits: a new WeCom account starts from the limits
// WeCom documents (30 a minute and 1,000 an hour to one member), on the console form
// when the platform is chosen and over the API when no limits are given; limits given
// are kept as given, and an update without limits keeps the account's.
func TestNewAccountsStartFromPlatformLimits(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	admin := c.as(adminUser)

	resp, body := admin.getHX("/accounts/config-fields?platform=wecom")
	wantStatus(t, "wecom fields", resp, body, http.StatusOK)
	wantContains(t, "wecom fields", body, `id="account-limits" hx-swap-oob="true"`, `name="limits.per_recipient_per_minute" value="30"`,
		`name="limits.per_recipient_per_hour" value="1000"`, "WeCom drops the excess without an error")
	resp, body = admin.getHX("/accounts/config-fields?platform=email")
	wantStatus(t, "email fields", resp, body, http.StatusOK)
	wantContains(t, "email fields", body, `name="config.host"`, `id="account-limits" hx-swap-oob="true"`)
	wantNotContains(t, "email fields", body, `value="1000"`, "WeCom drops")
	resp, body = admin.getHX("/accounts/config-fields?platform=wecom&account=" + models.SandboxAccountName)
	wantStatus(t, "an existing account's fields", resp, body, http.StatusOK)
	wantContains(t, "an existing account's fields", body, `name="config.corp_id"`)
	wantNotContains(t, "an existing account's fields", body, "hx-swap-oob")

	_, secret, err := c.store.CreateAPIKey(ctx, "setup", models.ScopeAdmin, adminUser)
	if err != nil {
		t.Fatal(err)
	}
	api := c.as("")
	call := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		resp, raw := api.do(method, path, "application/json", strings.NewReader(body), map[string]string{"Authorization": "Bearer " + secret})
		out := map[string]any{}
		_ = json.Unmarshal([]byte(raw), &out)
		return resp.StatusCode, out
	}
	limitsOf := func(name string) models.Limits {
		t.Helper()
		a, err := c.store.AccountByName(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return a.Limits
	}
	cfg := `"config":{"corp_id":"ww1","agent_id":"1000002","secret":"s3cret-value"}`
	if code, out := call("POST", "/api/v1/accounts", `{"name":"wx","platform":"wecom",`+cfg+`}`); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, out)
	}
	if l := limitsOf("wx"); l.PerRecipientPerMinute != 30 || l.PerRecipientPerHour != 1000 || l.PerSecond != 0 {
		t.Errorf("a WeCom account created without limits: %+v", l)
	}
	if code, out := call("POST", "/api/v1/accounts", `{"name":"wx2","platform":"wecom",`+cfg+`,"limits":{"per_second":5}}`); code != http.StatusCreated {
		t.Fatalf("create with limits: %d %v", code, out)
	}
	if l := limitsOf("wx2"); l != (models.Limits{PerSecond: 5}) {
		t.Errorf("limits given are kept as given: %+v", l)
	}
	if code, out := call("PUT", "/api/v1/accounts/wx", `{"name":"wx","platform":"wecom",`+cfg+`,"max_attempts":5}`); code != http.StatusOK {
		t.Fatalf("update: %d %v", code, out)
	}
	if l := limitsOf("wx"); l.PerRecipientPerHour != 1000 {
		t.Errorf("an update without limits changed them: %+v", l)
	}

	// The console form saves the hourly per-person limit like the others.
	resp, body = admin.post("/accounts/wx/edit", url.Values{"name": {"wx"}, "platform": {"wecom"}, "enabled": {"true"},
		"config.corp_id": {"ww1"}, "config.agent_id": {"1000002"}, "max_attempts": {"3"}, "limits.per_recipient_per_hour": {"500"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", resp.StatusCode, body)
	}
	if l := limitsOf("wx"); l != (models.Limits{PerRecipientPerHour: 500}) {
		t.Errorf("after the form: %+v", l)
	}
}
