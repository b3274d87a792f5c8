package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"herald/dispatch"
	"herald/models"
	"herald/simulator"
)

func TestAccountsPage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	admin := c.as(adminUser)
	const token = "s3cret-token-value"

	t.Run("list with live usage", func(t *testing.T) {
		resp, body := admin.get("/accounts")
		wantStatus(t, "GET /accounts", resp, body, http.StatusOK)
		wantContains(t, "account list", body, "sandbox", "default", "healthy", "no limits", `hx-trigger="every 2s"`)
		resp, body = admin.getHX("/accounts/usage")
		wantStatus(t, "usage partial", resp, body, http.StatusOK)
		wantContains(t, "usage partial", body, `id="account-usage"`, `data-account="sandbox"`)
	})

	t.Run("operators cannot see accounts", func(t *testing.T) {
		resp, body := c.as(operatorUser).get("/accounts")
		wantStatus(t, "operator GET /accounts", resp, body, http.StatusForbidden)
	})

	form := url.Values{"name": {"ty-main"}, "platform": {"tianyuan"}, "enabled": {"true"},
		"config.base_url": {"https://im.example.com/api"}, "config.token": {token},
		"limits.per_second": {"20"}, "limits.per_minute": {"10"}, "max_attempts": {"4"}}

	t.Run("create validates like the API and keeps the input", func(t *testing.T) {
		bad := url.Values{}
		for k, v := range form {
			bad[k] = v
		}
		bad.Set("config.base_url", "ftp://im.example.com")
		resp, body := admin.post("/accounts", bad)
		wantStatus(t, "bad url", resp, body, http.StatusUnprocessableEntity)
		if msg := fieldError(body, "config.base_url"); msg == "" {
			t.Fatalf("no error beside config.base_url:\n%s", body)
		}
		wantContains(t, "form keeps input", body, `value="ty-main"`, `value="ftp://im.example.com"`, `value="20"`)
		wantNotContains(t, "re-shown form", body, token)

		bad.Set("config.base_url", "https://im.example.com/api")
		bad.Set("limits.per_hour", "lots")
		resp, body = admin.post("/accounts", bad)
		wantStatus(t, "bad limit", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "limits.per_hour", "must be a whole number")

		bad.Del("limits.per_hour")
		bad.Set("max_attempts", "50")
		resp, body = admin.post("/accounts", bad)
		wantStatus(t, "bad attempts", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "max_attempts", "must be 1 to 20")

		bad.Set("max_attempts", "4")
		bad.Set("name", "Has Spaces")
		resp, body = admin.post("/accounts", bad)
		wantStatus(t, "bad name", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "name", "use 1–64 lower-case letters, digits, dashes or underscores")

		resp, body = admin.post("/accounts", form)
		wantRedirect(t, "create", resp, body, "/accounts")
		a, err := c.store.AccountByName(ctx, "ty-main")
		if err != nil {
			t.Fatal(err)
		}
		if a.Config["token"] != token || a.Limits.PerSecond != 20 || a.MaxAttempts != 4 || !a.Enabled {
			t.Errorf("created %+v", a)
		}
		if e := c.lastAudit("account.create"); e.TargetID != "ty-main" || e.Actor != adminUser {
			t.Errorf("audit %+v", e)
		}
	})

	t.Run("limit warnings on the list and the form", func(t *testing.T) {
		const warning = "per_second (20) can never be reached: per_minute is 10"
		_, body := admin.get("/accounts")
		wantContains(t, "account list", body, warning)
		_, body = admin.get("/accounts/ty-main/edit")
		wantContains(t, "account form", body, `id="limit-warnings"`, warning)
	})

	t.Run("secrets are never sent back and empty keeps them", func(t *testing.T) {
		resp, body := admin.get("/accounts/ty-main/edit")
		wantStatus(t, "edit form", resp, body, http.StatusOK)
		wantNotContains(t, "edit form", body, token)
		wantContains(t, "edit form", body, `type="password" id="config.token" name="config.token" value=""`, `placeholder="unchanged"`, `value="https://im.example.com/api"`)

		edit := url.Values{"name": {"ty-main"}, "platform": {"tianyuan"}, "enabled": {"true"},
			"config.base_url": {"https://im2.example.com/api"}, "config.token": {""}, "limits.per_second": {"5"}, "max_attempts": {"3"}}
		resp, body = admin.post("/accounts/ty-main/edit", edit)
		wantRedirect(t, "update", resp, body, "/accounts")
		a, _ := c.store.AccountByName(ctx, "ty-main")
		if a.Config["token"] != token || a.Config["base_url"] != "https://im2.example.com/api" || a.Limits.PerMinute != 0 {
			t.Errorf("after an update with an empty token: %+v", a)
		}

		edit.Set("config.token", "new-token")
		admin.post("/accounts/ty-main/edit", edit)
		if a, _ := c.store.AccountByName(ctx, "ty-main"); a.Config["token"] != "new-token" {
			t.Errorf("token after setting a new one: %q", a.Config["token"])
		}
	})

	t.Run("platform fields partial", func(t *testing.T) {
		resp, body := admin.getHX("/accounts/config-fields?platform=wecom")
		wantStatus(t, "config fields", resp, body, http.StatusOK)
		wantContains(t, "wecom fields", body, `name="config.corp_id"`, `name="config.agent_id"`, `type="password" id="config.secret"`)
		_, body = admin.getHX("/accounts/config-fields?platform=email")
		wantContains(t, "email fields", body, `name="config.host"`, `name="config.from"`, `type="password" id="config.password"`, `<option value="implicit"`)
		_, body = admin.getHX("/accounts/config-fields?platform=tianyuan&account=ty-main")
		wantContains(t, "stored account's fields", body, `placeholder="unchanged"`)
		wantNotContains(t, "stored account's fields", body, "new-token")
	})

	t.Run("retry policy per error class", func(t *testing.T) {
		_, body := admin.get("/accounts/ty-main/edit")
		wantContains(t, "retry table", body, `name="retry_policy.transient.max_retries"`, `placeholder="no limit"`,
			`name="retry_policy.rate_limited.delay_seconds"`, `placeholder="60"`, `placeholder="3600"`)
		edit := url.Values{"name": {"ty-main"}, "platform": {"tianyuan"}, "enabled": {"true"},
			"config.base_url": {"https://im2.example.com/api"}, "limits.per_second": {"5"}, "max_attempts": {"3"},
			"retry_policy.transient.max_retries": {"1"}, "retry_policy.transient.delay_seconds": {"soon"}}
		resp, body := admin.post("/accounts/ty-main/edit", edit)
		wantStatus(t, "retry delay not a number", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "retry_policy.transient.delay_seconds", "must be a number")
		wantContains(t, "form keeps input", body, `value="soon"`)

		edit.Set("retry_policy.transient.delay_seconds", "30")
		edit.Set("retry_policy.transient.max_delay_seconds", "10")
		resp, body = admin.post("/accounts/ty-main/edit", edit)
		wantStatus(t, "cap below the first delay", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "retry_policy.transient.max_delay_seconds", "must not be shorter than the first delay")

		edit.Set("retry_policy.transient.max_delay_seconds", "120")
		resp, body = admin.post("/accounts/ty-main/edit", edit)
		wantRedirect(t, "save retry policy", resp, body, "/accounts")
		a, _ := c.store.AccountByName(ctx, "ty-main")
		tr := a.RetryPolicy["transient"]
		if len(a.RetryPolicy) != 1 || tr.MaxRetries == nil || *tr.MaxRetries != 1 || tr.DelaySeconds == nil || *tr.DelaySeconds != 30 ||
			tr.Factor != nil || tr.MaxDelaySeconds == nil || *tr.MaxDelaySeconds != 120 {
			t.Errorf("stored retry policy %+v", a.RetryPolicy)
		}
		_, body = admin.get("/accounts/ty-main/edit")
		wantContains(t, "saved retry values", body, `name="retry_policy.transient.delay_seconds" value="30"`, `name="retry_policy.transient.max_delay_seconds" value="120"`)

		// Clearing the fields goes back to the defaults.
		edit.Del("retry_policy.transient.max_retries")
		edit.Del("retry_policy.transient.delay_seconds")
		edit.Del("retry_policy.transient.max_delay_seconds")
		admin.post("/accounts/ty-main/edit", edit)
		if a, _ := c.store.AccountByName(ctx, "ty-main"); len(a.RetryPolicy) != 0 {
			t.Errorf("retry policy after clearing every field: %+v", a.RetryPolicy)
		}
	})

	t.Run("usage JSON", func(t *testing.T) {
		resp, body := admin.get("/accounts/ty-main/usage")
		wantStatus(t, "usage", resp, body, http.StatusOK)
		var usage []struct {
			Window      string
			Used, Limit int
		}
		if err := json.Unmarshal([]byte(body), &usage); err != nil {
			t.Fatalf("usage %s: %v", body, err)
		}
		if len(usage) != 1 || usage[0].Window != "per_second" || usage[0].Limit != 5 {
			t.Errorf("usage %s", body)
		}
		resp, _ = admin.get("/accounts/nope/usage")
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("usage of an unknown account: %d", resp.StatusCode)
		}
	})

	t.Run("disable, enable and delete", func(t *testing.T) {
		tyMain, _ := c.store.AccountByName(ctx, "ty-main")
		compose := url.Values{"account": {fmt.Sprint(tyMain.ID)}, "content.text": {"x"}, "recipient": {fmt.Sprint(c.recipient("E2001").ID)}}
		if resp, body := admin.postHX("/compose/preview", compose); resp.StatusCode != http.StatusOK {
			t.Fatalf("preview through ty-main: %d\n%s", resp.StatusCode, body)
		}
		resp, body := admin.post("/accounts/ty-main/enabled", url.Values{"enabled": {"false"}})
		wantRedirect(t, "disable", resp, body, "/accounts")
		if a, _ := c.store.AccountByName(ctx, "ty-main"); a.Enabled {
			t.Error("still enabled")
		}
		c.lastAudit("account.disable")
		// Intake sees the change at once, though it caches accounts.
		resp, body = admin.post("/compose", compose)
		wantStatus(t, "compose through a disabled account", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "account", "account ty-main is disabled")
		admin.post("/accounts/ty-main/enabled", url.Values{"enabled": {"true"}})
		if a, _ := c.store.AccountByName(ctx, "ty-main"); !a.Enabled || a.Config["token"] != "new-token" {
			t.Errorf("after enabling: %+v", a)
		}

		// An account with an undelivered message cannot be deleted.
		sandbox, _ := c.store.AccountByName(ctx, "sandbox")
		if _, err := c.h.Dispatch.Submit(ctx, dispatch.Request{Source: "console", Actor: "test", AccountID: sandbox.ID,
			Recipients: []string{"E2001"}, Text: "hello"}); err != nil {
			t.Fatal(err)
		}
		resp, body = admin.post("/accounts/sandbox/delete", nil)
		wantStatus(t, "delete in use", resp, body, http.StatusConflict)
		wantContains(t, "account list", body, "has undelivered messages")

		resp, body = admin.post("/accounts/ty-main/delete", nil)
		wantRedirect(t, "delete", resp, body, "/accounts")
		if _, err := c.store.AccountByName(ctx, "ty-main"); err == nil {
			t.Error("account still exists")
		}
	})
}

func TestAccountFormNeverEchoesSecrets(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	a := &models.Account{Name: "hook", Platform: "webhook", Enabled: true, MaxAttempts: 3,
		Config: map[string]string{"url": "https://hooks.example.com/x", "secret": "hmac-key-123"}}
	if err := c.store.SaveAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	admin := c.as(adminUser)
	for _, path := range []string{"/accounts", "/accounts/hook/edit", "/accounts/config-fields?platform=webhook&account=hook"} {
		_, body := admin.get(path)
		if strings.Contains(body, "hmac-key-123") {
			t.Errorf("%s shows the stored secret", path)
		}
	}
	// An optional secret can be cleared on purpose.
	resp, body := admin.post("/accounts/hook/edit", url.Values{"name": {"hook"}, "platform": {"webhook"}, "enabled": {"true"},
		"config.url": {"https://hooks.example.com/x"}, "config.secret.clear": {"true"}, "max_attempts": {"3"}})
	wantRedirect(t, "clear secret", resp, body, "/accounts")
	if a, _ := c.store.AccountByName(ctx, "hook"); a.Config["secret"] != "" {
		t.Errorf("secret after clearing: %q", a.Config["secret"])
	}
}

func TestAccountTestConnection(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	admin := c.as(adminUser)

	// A real platform: the simulator over HTTP answers the probe's HEAD request.
	sim := httptest.NewServer(simulator.New(simulator.Faults{}).Handler())
	t.Cleanup(sim.Close)
	const token = "probe-secret-token"
	for name, base := range map[string]string{"ty-up": sim.URL + "/tianyuan", "ty-down": "http://127.0.0.1:1"} {
		a := &models.Account{Name: name, Platform: "tianyuan", Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3,
			Config: map[string]string{"base_url": base, "token": token}}
		if err := c.store.SaveAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}

	_, body := admin.get("/accounts/ty-up/edit")
	wantContains(t, "edit form", body, `hx-post="/accounts/ty-up/test"`, `id="probe-result"`, "Test connection")

	for _, tc := range []struct {
		account string
		ok      bool
		want    []string
	}{
		{"sandbox", true, []string{"Connected", "In-process simulator"}},
		{"ty-up", true, []string{"Connected", "HEAD " + sim.URL + "/tianyuan/messages", "checked on the first real send"}},
		{"ty-down", false, []string{"Failed", "refused"}},
	} {
		resp, body := admin.postHX("/accounts/"+tc.account+"/test", nil)
		wantStatus(t, "test "+tc.account, resp, body, http.StatusOK)
		wantContains(t, "probe of "+tc.account, body, append(tc.want, fmt.Sprintf(`data-ok="%t"`, tc.ok))...)
		wantNotContains(t, "probe of "+tc.account, body, token, "<html")
		if e := c.lastAudit("account.test"); e.TargetID != tc.account || e.Actor != adminUser {
			t.Errorf("audit of the test of %s: %+v", tc.account, e)
		}
	}
	if n := len(c.sandbox.Deliveries()); n != 0 {
		t.Errorf("testing the sandbox account delivered %d messages", n)
	}

	// Without htmx the form comes back with the result in place.
	resp, body := admin.post("/accounts/ty-down/test", nil)
	wantStatus(t, "test without htmx", resp, body, http.StatusOK)
	wantContains(t, "form with the result", body, "<html", `id="probe-result"`, `data-ok="false"`, `name="config.base_url"`)

	resp, body = admin.postHX("/accounts/nope/test", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("test of an unknown account: %d", resp.StatusCode)
	}
	resp, body = c.as(operatorUser).postHX("/accounts/sandbox/test", nil)
	wantStatus(t, "operator test", resp, body, http.StatusForbidden)
}
