package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"herald/access"
	"herald/models"
	"herald/sending"
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

	_, secret, err := c.store.Access().CreateAPIKey(ctx, "setup", access.ScopeAdmin, adminUser)
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
	cfg := `"config":{"corp_id":"ww1","agent_id":"1000002","secret":"s3cret-value"}`
	if code, out := call("POST", "/api/v1/accounts", `{"name":"wx","platform":"wecom",`+cfg+`}`); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, out)
	}
	if l := limitsOf(t, c, "wx"); l.PerRecipientPerMinute != 30 || l.PerRecipientPerHour != 1000 || l.PerSecond != 0 {
		t.Errorf("a WeCom account created without limits: %+v", l)
	}
	// Lower than documented: kept as given, no confirmation needed.
	if code, out := call("POST", "/api/v1/accounts", `{"name":"wx2","platform":"wecom",`+cfg+`,"limits":{"per_second":5,"per_recipient_per_minute":20,"per_recipient_per_hour":1000}}`); code != http.StatusCreated {
		t.Fatalf("create with lower limits: %d %v", code, out)
	}
	if l := limitsOf(t, c, "wx2"); l != (sending.Limits{PerSecond: 5, PerRecipientPerMinute: 20, PerRecipientPerHour: 1000}) {
		t.Errorf("limits given are kept as given: %+v", l)
	}
	if e := c.lastAudit("account.create"); e.ParamMap()["limits"] != "per_second 5, per_recipient_per_minute 20, per_recipient_per_hour 1000" {
		t.Errorf("create audit params %v, want the limits named", e.ParamMap())
	}
	if code, out := call("PUT", "/api/v1/accounts/wx", `{"name":"wx","platform":"wecom",`+cfg+`,"max_attempts":5}`); code != http.StatusOK {
		t.Fatalf("update: %d %v", code, out)
	}
	if l := limitsOf(t, c, "wx"); l.PerRecipientPerHour != 1000 {
		t.Errorf("an update without limits changed them: %+v", l)
	}
}

// TestLimitsAboveDocumentedNeedConfirmation: raising a limit above what the platform
// documents, or clearing it (0, no limit), is refused naming the limit until confirmed,
// from the API and from the console form (in both languages); once confirmed it is
// saved, audited with what was confirmed, and warned about on the account list, the
// form and the API's warnings. An account kept above its limits is not asked again.
func TestLimitsAboveDocumentedNeedConfirmation(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	admin := c.as(adminUser)
	_, secret, err := c.store.Access().CreateAPIKey(ctx, "setup", access.ScopeAdmin, adminUser)
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
	cfg := `"config":{"corp_id":"ww1","agent_id":"1000002","secret":"s3cret-value"}`
	above := `{"name":"wx","platform":"wecom",` + cfg + `,"limits":{"per_recipient_per_minute":60,"per_recipient_per_hour":1000}`
	code, out := call("POST", "/api/v1/accounts", above+`}`)
	if e, _ := out["error"].(map[string]any); code != http.StatusUnprocessableEntity || e["field"] != "limits.per_recipient_per_minute" {
		t.Fatalf("above documented without confirmation: %d %v, want 422 naming limits.per_recipient_per_minute", code, out)
	}
	if _, err := c.store.Sending().AccountByName(ctx, "wx"); err == nil {
		t.Fatal("a refused account was saved")
	}
	code, out = call("POST", "/api/v1/accounts", above+`,"confirm_above_documented":true}`)
	if code != http.StatusCreated {
		t.Fatalf("confirmed: %d %v", code, out)
	}
	if w := fmt.Sprint(out["warnings"]); !strings.Contains(w, "per person per minute is 60, above the 30 WeCom documents") {
		t.Errorf("warnings %s, want the limit above WeCom's named", w)
	}
	if e := c.lastAudit("account.create"); e.ParamMap()["above_documented"] != "per_recipient_per_minute 60 (documented 30)" {
		t.Errorf("create audit params %v, want the confirmed excess named", e.ParamMap())
	}
	// Saved again unchanged: not asked again.
	if code, out := call("PUT", "/api/v1/accounts/wx", above+`,"max_attempts":4}`); code != http.StatusOK {
		t.Fatalf("an update keeping the confirmed limit: %d %v", code, out)
	}

	// The console: the form shows what WeCom documents beside each limit, refuses
	// clearing the hourly limit with the confirmation beside the error, in the reader's
	// language, and saves it once ticked.
	_, body := admin.get("/accounts/wx/edit")
	wantContains(t, "edit form", body, `name="limits.per_recipient_per_second"`, "documented: 30", "documented: 1000",
		"per person per minute is 60, above the 30 WeCom documents")
	form := url.Values{"name": {"wx"}, "platform": {"wecom"}, "enabled": {"true"}, "config.corp_id": {"ww1"},
		"config.agent_id": {"1000002"}, "max_attempts": {"3"}, "limits.per_recipient_per_minute": {"60"}, "limits.per_recipient_per_hour": {"0"}}
	for lang, want := range map[string]string{"en": "no limit, where wecom documents 1000", "zh-CN": "不限，而平台公布的上限为 1000"} {
		resp, body := admin.do("POST", "/accounts/wx/edit", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()),
			map[string]string{"Accept-Language": lang})
		wantStatus(t, lang+" cleared without confirmation", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "limits.per_recipient_per_hour", want)
		wantContains(t, lang+" confirmation offered", body, `name="confirm_above_documented"`)
	}
	if l := limitsOf(t, c, "wx"); l.PerRecipientPerHour != 1000 {
		t.Fatalf("a refused form changed the limits: %+v", l)
	}
	form.Set("confirm_above_documented", "true")
	resp, body := admin.post("/accounts/wx/edit", form)
	wantRedirect(t, "confirmed in the form", resp, body, "/accounts")
	if l := limitsOf(t, c, "wx"); l.PerRecipientPerHour != 0 || l.PerRecipientPerMinute != 60 {
		t.Errorf("after the confirmed form: %+v", l)
	}
	if p := c.lastAudit("account.update").ParamMap(); p["limits"] != "per_recipient_per_hour 1000 → 0" ||
		p["above_documented"] != "per_recipient_per_hour none (documented 1000)" {
		t.Errorf("update audit params %v, want the change and the confirmed excess named", p)
	}
	for lang, want := range map[string]string{"en": "per person per hour has no limit, where WeCom documents 1000",
		"zh-CN": "每人每小时不限，而平台公布的上限为 1000"} {
		_, body := admin.getIn(lang, "/accounts")
		wantContains(t, lang+" account list", body, want)
	}
}

// limitsOf reads an account's stored limits.
func limitsOf(t *testing.T, c *console, name string) sending.Limits {
	t.Helper()
	a, err := c.store.Sending().AccountByName(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return a.Limits
}
