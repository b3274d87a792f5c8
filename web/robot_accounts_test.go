package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"herald/access"
)

// A group robot account through the API: a webhook URL off the platform's host and a
// secret of the wrong shape are refused naming their field; a limit above the robot's
// documented one needs the confirmation; the webhook URLs and the secret never come
// back, nor reach the audit log.
func TestRobotAccountThroughTheAPI(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	_, key, err := c.store.Access().CreateAPIKey(t.Context(), "setup", access.ScopeAdmin, adminUser)
	if err != nil {
		t.Fatal(err)
	}
	api := c.as("")
	call := func(method, path, body string) (int, string) {
		t.Helper()
		resp, raw := api.do(method, path, "application/json", strings.NewReader(body), map[string]string{"Authorization": "Bearer " + key})
		return resp.StatusCode, raw
	}
	const hook = "https://oapi.dingtalk.com/robot/send?access_token=tok0123456789"
	account := func(url, secret, limits string) string {
		return fmt.Sprintf(`{"name":"ops-bot","platform":"dingtalk_bot","config":{"webhook_url":%q,"secret":%q,"keyword":"告警"}%s}`, url, secret, limits)
	}
	for _, tt := range []struct{ name, body, field string }{
		{"host", account("https://robot.example.com/send?access_token=x", "SECabc", ""), "config.webhook_url"},
		{"scheme", account("http://oapi.dingtalk.com/robot/send?access_token=x", "SECabc", ""), "config.webhook_url"},
		{"secret", account(hook, "not-a-dingtalk-secret", ""), "config.secret"},
		{"limit", account(hook, "SECabc", `,"limits":{"per_minute":30}`), "limits.per_minute"},
	} {
		code, raw := call("POST", "/api/v1/accounts", tt.body)
		var out struct{ Error struct{ Field string } }
		_ = json.Unmarshal([]byte(raw), &out)
		if code != http.StatusUnprocessableEntity || out.Error.Field != tt.field {
			t.Errorf("%s: %d %s, want 422 naming %s", tt.name, code, raw, tt.field)
		}
	}
	if code, raw := call("POST", "/api/v1/accounts", account(hook+"\n"+hook+"x", "SECabc", "")); code != http.StatusCreated {
		t.Fatalf("a pool of two: %d %s", code, raw)
	}
	code, raw := call("GET", "/api/v1/accounts/ops-bot", "")
	if code != http.StatusOK || strings.Contains(raw, "tok0123456789") || strings.Contains(raw, "SECabc") {
		t.Errorf("the account read back: %d %s, want its webhook URLs and secret masked", code, raw)
	}
	if !strings.Contains(raw, `"per_minute":20`) {
		t.Errorf("the account read back: %s, want the robot's documented per_minute 20", raw)
	}
	e := c.lastAudit("account.create")
	if all := e.Detail + fmt.Sprint(e.ParamMap()); e.TargetID != "ops-bot" || strings.Contains(all, "tok0123456789") || strings.Contains(all, "SECabc") {
		t.Errorf("audit entry %s %q, want the account named and no credential", e.TargetID, all)
	}
}
