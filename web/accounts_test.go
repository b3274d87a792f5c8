package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"herald/channels"
	"herald/dispatch"
	"herald/sending"
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
		a, err := c.store.Sending().AccountByName(ctx, "ty-main")
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

	t.Run("secrets are never sent back; empty keeps them while the address stays", func(t *testing.T) {
		resp, body := admin.get("/accounts/ty-main/edit")
		wantStatus(t, "edit form", resp, body, http.StatusOK)
		wantNotContains(t, "edit form", body, token)
		wantContains(t, "edit form", body, `type="password" id="config.token" name="config.token" value=""`, `placeholder="unchanged"`, `value="https://im.example.com/api"`)

		edit := url.Values{"name": {"ty-main"}, "platform": {"tianyuan"}, "enabled": {"true"},
			"config.base_url": {"https://im.example.com/api"}, "config.token": {""}, "limits.per_second": {"5"}, "max_attempts": {"3"}}
		resp, body = admin.post("/accounts/ty-main/edit", edit)
		wantRedirect(t, "update", resp, body, "/accounts")
		a, _ := c.store.Sending().AccountByName(ctx, "ty-main")
		if a.Config["token"] != token || a.Limits.PerMinute != 0 {
			t.Errorf("after an update with an empty token: %+v", a)
		}

		// A new address needs the token typed again.
		edit.Set("config.base_url", "https://im2.example.com/api")
		resp, body = admin.post("/accounts/ty-main/edit", edit)
		wantStatus(t, "new address, token kept", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "config.token", "re-enter the token for the new address: base_url changed, and a stored token is never sent to a new address")
		wantContains(t, "form keeps input", body, `value="https://im2.example.com/api"`)
		wantNotContains(t, "re-shown form", body, token)
		if a, _ := c.store.Sending().AccountByName(ctx, "ty-main"); a.Config["base_url"] != "https://im.example.com/api" {
			t.Errorf("a refused edit changed base_url to %s", a.Config["base_url"])
		}

		edit.Set("config.token", "new-token")
		resp, body = admin.post("/accounts/ty-main/edit", edit)
		wantRedirect(t, "new address with a new token", resp, body, "/accounts")
		if a, _ := c.store.Sending().AccountByName(ctx, "ty-main"); a.Config["token"] != "new-token" || a.Config["base_url"] != "https://im2.example.com/api" {
			t.Errorf("after a new address and token: %v", a.Config)
		}
		if e := c.lastAudit("account.update"); e.ParamMap()["destination"] != "base_url https://im.example.com/api → https://im2.example.com/api" ||
			e.ParamMap()["secrets_entered"] != "token" {
			t.Errorf("audit params %v, want the old and new base_url and the token entered", e.ParamMap())
		}
	})

	t.Run("platform fields partial", func(t *testing.T) {
		resp, body := admin.getHX("/accounts/config-fields?platform=wecom")
		wantStatus(t, "config fields", resp, body, http.StatusOK)
		wantContains(t, "wecom fields", body, `name="config.corp_id"`, `name="config.agent_id"`, `type="password" id="config.secret"`)
		_, body = admin.getHX("/accounts/config-fields?platform=email")
		wantContains(t, "email fields", body, `name="config.host"`, `name="config.from"`, `type="password" id="config.password"`, `<option value="implicit"`,
			`<option value="starttls" selected>`)
		wantNotContains(t, "email fields", body, `<option value="">`, `id="config.tls.warning"`)
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
		a, _ := c.store.Sending().AccountByName(ctx, "ty-main")
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
		if a, _ := c.store.Sending().AccountByName(ctx, "ty-main"); len(a.RetryPolicy) != 0 {
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
		tyMain, _ := c.store.Sending().AccountByName(ctx, "ty-main")
		compose := url.Values{"account": {fmt.Sprint(tyMain.ID)}, "content.text": {"x"}, "recipient": {fmt.Sprint(c.recipient("E2001").ID)}}
		if resp, body := admin.postHX("/compose/preview", compose); resp.StatusCode != http.StatusOK {
			t.Fatalf("preview through ty-main: %d\n%s", resp.StatusCode, body)
		}
		resp, body := admin.post("/accounts/ty-main/enabled", url.Values{"enabled": {"false"}})
		wantRedirect(t, "disable", resp, body, "/accounts")
		if a, _ := c.store.Sending().AccountByName(ctx, "ty-main"); a.Enabled {
			t.Error("still enabled")
		}
		c.lastAudit("account.disable")
		// Intake sees the change at once, though it caches accounts.
		resp, body = admin.post("/compose", compose)
		wantStatus(t, "compose through a disabled account", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "account", "account ty-main is disabled")
		admin.post("/accounts/ty-main/enabled", url.Values{"enabled": {"true"}})
		if a, _ := c.store.Sending().AccountByName(ctx, "ty-main"); !a.Enabled || a.Config["token"] != "new-token" {
			t.Errorf("after enabling: %+v", a)
		}

		// An account with an undelivered message cannot be deleted.
		sandbox, _ := c.store.Sending().AccountByName(ctx, "sandbox")
		if _, err := c.h.Dispatch.Submit(ctx, dispatch.Request{Source: "console", Actor: "test", AccountID: sandbox.ID,
			Recipients: []string{"E2001"}, Text: "hello"}); err != nil {
			t.Fatal(err)
		}
		resp, body = admin.post("/accounts/sandbox/delete", nil)
		wantStatus(t, "delete in use", resp, body, http.StatusConflict)
		wantContains(t, "account list", body, "has undelivered messages")

		resp, body = admin.post("/accounts/ty-main/delete", nil)
		wantRedirect(t, "delete", resp, body, "/accounts")
		if _, err := c.store.Sending().AccountByName(ctx, "ty-main"); err == nil {
			t.Error("account still exists")
		}
	})
}

func TestAccountFormNeverEchoesSecrets(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	a := &sending.Account{Name: "hook", Platform: "webhook", Enabled: true, MaxAttempts: 3,
		Config: map[string]string{"url": "https://hooks.example.com/x", "secret": "hmac-key-123"}}
	if err := c.store.Sending().SaveAccount(ctx, a); err != nil {
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
	if a, _ := c.store.Sending().AccountByName(ctx, "hook"); a.Config["secret"] != "" {
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
		a := &sending.Account{Name: name, Platform: "tianyuan", Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3,
			Config: map[string]string{"base_url": base, "token": token}}
		if err := c.store.Sending().SaveAccount(ctx, a); err != nil {
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

// platformHost is an HTTP host that answers everything and notes each Authorization
// header it receives.
type platformHost struct {
	url  string
	mu   sync.Mutex
	auth []string
}

func startPlatformHost(t *testing.T) *platformHost {
	h := &platformHost{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.auth = append(h.auth, r.Header.Get("Authorization"))
		h.mu.Unlock()
		w.Write([]byte(`{"code":0,"message":"ok","msg_id":"m1"}`))
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

func (h *platformHost) heard() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.auth)
}

// An admin who changes where an account connects must type its secret again, in the
// console and the API alike: a stored token is never handed to a host it was not
// entered for, by a connection test or a send.
func TestKeptSecretNeverReachesANewAddress(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	admin := c.as(adminUser)
	platform, attacker := startPlatformHost(t), startPlatformHost(t)
	const token = "stored-token-for-the-platform"

	resp, body := admin.post("/accounts", url.Values{"name": {"ty-ops"}, "platform": {"tianyuan"}, "enabled": {"true"},
		"allow_private_network": {"true"}, "config.base_url": {platform.url}, "config.token": {token}, "max_attempts": {"3"}})
	wantRedirect(t, "create", resp, body, "/accounts")

	// The console: a new base_url with the token left empty.
	resp, body = admin.post("/accounts/ty-ops/edit", url.Values{"name": {"ty-ops"}, "platform": {"tianyuan"}, "enabled": {"true"},
		"allow_private_network": {"true"}, "config.base_url": {attacker.url}, "config.token": {""}, "max_attempts": {"3"}})
	wantStatus(t, "console: new address, token kept", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "config.token", "re-enter the token for the new address")

	// The API: the token sent back masked, or left out; a new path counts as a new address.
	_, key, err := c.store.Access().CreateAPIKey(ctx, "provisioning", "admin", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	api := c.as("")
	for name, body := range map[string]string{
		"masked":   fmt.Sprintf(`{"platform":"tianyuan","allow_private_network":true,"config":{"base_url":%q,"token":"********"}}`, attacker.url),
		"left out": fmt.Sprintf(`{"platform":"tianyuan","allow_private_network":true,"config":{"base_url":%q}}`, attacker.url),
		"path":     fmt.Sprintf(`{"platform":"tianyuan","allow_private_network":true,"config":{"base_url":%q,"path":"/relay"}}`, platform.url),
	} {
		resp, answer := api.do("PUT", "/api/v1/accounts/ty-ops", "application/json", strings.NewReader(body),
			map[string]string{"Authorization": "Bearer " + key})
		var e struct {
			Error struct{ Code, Message, Field string }
		}
		json.Unmarshal([]byte(answer), &e)
		if resp.StatusCode != http.StatusUnprocessableEntity || e.Error.Field != "config.token" ||
			!strings.Contains(e.Error.Message, "re-enter the token for the new address") {
			t.Errorf("API, token %s: %d %s, want 422 naming config.token", name, resp.StatusCode, answer)
		}
	}

	// What the account does next goes where the token was entered for.
	resp, body = admin.postHX("/accounts/ty-ops/test", nil)
	wantContains(t, "connection test", body, `data-ok="true"`, platform.url)
	a, err := c.store.Sending().AccountByName(ctx, "ty-ops")
	if err != nil {
		t.Fatal(err)
	}
	sender, err := c.h.Channels.Sender(a.Channel())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sender.Send(ctx, channels.Message{ID: "m1", To: "ty_E1001", MsgType: "text", Content: "hello"}); err != nil {
		t.Fatalf("send: %v", err)
	}
	if got := platform.heard(); len(got) != 2 || got[1] != "Bearer "+token {
		t.Errorf("the platform heard %q, want the connection test and the send with the token", got)
	}

	// With the token typed again, the API may move the account; the new host gets only
	// the new token.
	resp, answer := api.do("PUT", "/api/v1/accounts/ty-ops", "application/json",
		strings.NewReader(fmt.Sprintf(`{"platform":"tianyuan","allow_private_network":true,"config":{"base_url":%q,"token":"token-for-the-new-host"}}`, attacker.url)),
		map[string]string{"Authorization": "Bearer " + key})
	wantStatus(t, "API: new address with a new token", resp, answer, http.StatusOK)
	if e := c.lastAudit("account.update"); e.Actor != "apikey:provisioning" ||
		e.ParamMap()["destination"] != "base_url "+platform.url+" → "+attacker.url || e.ParamMap()["secrets_entered"] != "token" {
		t.Errorf("audit %+v, want the old and new base_url", e)
	}
	admin.postHX("/accounts/ty-ops/test", nil)
	for _, h := range attacker.heard() {
		if strings.Contains(h, token) {
			t.Errorf("the new host received the stored token: %q", h)
		}
	}
	if got := attacker.heard(); len(got) != 1 || got[0] != "Bearer token-for-the-new-host" {
		t.Errorf("the new host heard %q, want one test with the new token", got)
	}
}

// Mail in clear is a choice made explicitly, and the account says so wherever it shows.
func TestEmailWithoutTLSWarns(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	admin := c.as(adminUser)
	const warning = "tls is none: mail travels unencrypted"
	form := url.Values{"name": {"relay"}, "platform": {"email"}, "enabled": {"true"}, "allow_private_network": {"true"},
		"config.host": {"10.0.0.25"}, "config.from": {"herald@example.com"}, "config.tls": {"starttls"}, "max_attempts": {"3"}}
	resp, body := admin.post("/accounts", form)
	wantRedirect(t, "create with starttls", resp, body, "/accounts")
	_, body = admin.get("/accounts/relay/edit")
	wantContains(t, "starttls account", body, `<option value="starttls" selected>`)
	wantNotContains(t, "starttls account", body, warning)

	form.Set("config.tls", "none")
	resp, body = admin.post("/accounts/relay/edit", form)
	wantRedirect(t, "choose none", resp, body, "/accounts")
	_, body = admin.get("/accounts/relay/edit")
	wantContains(t, "account page", body, `<option value="none" selected>`, `id="config.tls.warning"`, warning)
	_, body = admin.get("/accounts")
	wantContains(t, "account list", body, warning)
}

// A webhook URL's query string (a robot's access_token) is never shown once stored: the
// API and the account form show it masked, as the audit log does, and an edit that
// sends the masked URL back unchanged keeps the stored one.
func TestWebhookURLQueryIsMaskedOnRead(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	const stored = "https://hooks.example.com/robot/send?access_token=tok-4242"
	a := &sending.Account{Name: "hook", Platform: "webhook", Enabled: true, MaxAttempts: 3,
		Config: map[string]string{"url": stored, "secret": "hmac-key-123"}}
	if err := c.store.Sending().SaveAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	admin := c.as(adminUser)
	for _, path := range []string{"/accounts", "/accounts/hook/edit", "/accounts/config-fields?platform=webhook&account=hook"} {
		if _, body := admin.get(path); strings.Contains(body, "tok-4242") {
			t.Errorf("%s shows the URL's access_token", path)
		}
	}
	key := newKey(t, c, "ops", "admin")
	var got struct {
		Config map[string]any `json:"config"`
	}
	if status := apiJSON(t, c, key, "GET", "/api/v1/accounts/hook", "", &got); status != http.StatusOK {
		t.Fatalf("GET the account: %d", status)
	}
	shown, _ := got.Config["url"].(string)
	if shown != "https://hooks.example.com/robot/send?***" {
		t.Errorf("the API shows url %q, want the query masked", shown)
	}
	keeps := func(how string) {
		t.Helper()
		if a, err := c.store.Sending().AccountByName(ctx, "hook"); err != nil || a.Config["url"] != stored {
			t.Errorf("%s: stored url %q, %v; want it kept", how, a.Config["url"], err)
		}
	}
	body := `{"name":"hook","platform":"webhook","enabled":true,"max_attempts":3,"config":{"url":"` + shown + `","secret":"********"}}`
	if status := apiJSON(t, c, key, "PUT", "/api/v1/accounts/hook", body, nil); status != http.StatusOK {
		t.Fatalf("PUT the account as read: %d", status)
	}
	keeps("a PUT of the masked URL")
	resp, page := admin.post("/accounts/hook/edit", url.Values{"name": {"hook"}, "platform": {"webhook"}, "enabled": {"true"},
		"config.url": {shown}, "max_attempts": {"3"}})
	wantRedirect(t, "the form sent back as shown", resp, page, "/accounts")
	keeps("the form sent back as shown")
	// A URL typed anew is stored as typed.
	body = `{"name":"hook","platform":"webhook","enabled":true,"max_attempts":3,"config":{"url":"https://hooks.example.com/robot/send?access_token=new-1","secret":"hmac-key-456"}}`
	if status := apiJSON(t, c, key, "PUT", "/api/v1/accounts/hook", body, nil); status != http.StatusOK {
		t.Fatalf("PUT a new URL: %d", status)
	}
	if a, _ := c.store.Sending().AccountByName(ctx, "hook"); a.Config["url"] != "https://hooks.example.com/robot/send?access_token=new-1" {
		t.Errorf("stored url after a new one: %q", a.Config["url"])
	}
}
