package main

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/channels"
	"herald/delivery"
	"herald/directory"
	"herald/dispatch"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/sending"
	"herald/simulator"
	"herald/templates"
)

// phoneConfig is an account's config for provider pointed at the simulator at base,
// with the keys the simulator knows.
func phoneConfig(base, provider string, voice bool) map[string]string {
	cfg := map[string]string{"provider": provider}
	switch provider {
	case channels.ProviderAliyun:
		cfg["access_key_id"], cfg["access_key_secret"], cfg["base_url"] = simulator.DefaultAliyunKey, simulator.DefaultAliyunKey+"-secret", base+"/aliyun"
	case channels.ProviderTencent:
		cfg["secret_id"], cfg["secret_key"], cfg["base_url"], cfg["sdk_app_id"] = simulator.DefaultTencentKey, simulator.DefaultTencentKey+"-secret", base+"/tencent", "1400000001"
	case channels.ProviderHTTP:
		cfg["url"], cfg["success_path"], cfg["success_value"] = base+"/phone-gateway/sms", "code", "0"
		if voice {
			cfg["url"] = base + "/phone-gateway/call"
		}
	}
	if voice {
		cfg["callback_token"] = "cb-token"
	} else if provider != channels.ProviderHTTP {
		cfg["sign_name"] = "Herald"
	}
	return cfg
}

// An SMS through each provider: a template names the provider's template code and
// maps its parameters; intake renders them for the person, the worker sends them signed
// as the provider signs, and the simulator, which checked the signature, records the
// number, the code and the parameters in order. A template without a code is refused
// for the cloud providers, naming provider_template, and nothing is sent.
func TestSMSThroughEachProvider(t *testing.T) {
	t.Parallel()
	h := startHerald(t, testEnv(t))
	ctx := context.Background()
	sim := simulator.NewWithOptions(simulator.Faults{}, simulator.Options{Seed: 7})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	store := h.App.Store
	if err := store.Directory().CreateRecipient(ctx, &directory.Recipient{ExternalID: "S1", Name: "Zhou", OrgType: directory.Branch,
		Mobile: "13800138000", Active: true}); err != nil {
		t.Fatal(err)
	}
	for _, tmpl := range []*templates.Template{
		{Name: "disk-full", MsgType: "text", Body: "【Herald】{{.host}} 磁盘已满，级别 {{.level}}", Variables: templates.StringList{"host", "level"},
			ProviderTemplate: "SMS_100001", ProviderParams: templates.StringList{"host={{.host}}", "level={{.level}}"}},
		{Name: "plain", MsgType: "text", Body: "{{.host}} is full", Variables: templates.StringList{"host"}},
	} {
		if err := store.Templates().CreateTemplate(ctx, tmpl); err != nil {
			t.Fatal(err)
		}
	}
	for _, provider := range channels.Providers {
		acct := &sending.Account{Name: "sms-" + provider, Platform: "sms", Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3, Healthy: true,
			Config: phoneConfig(srv.URL, provider, false)}
		if err := store.Sending().SaveAccount(ctx, acct); err != nil {
			t.Fatal(err)
		}
		res, err := h.App.Dispatch.Submit(ctx, dispatch.Request{Source: "api", Actor: "test", Account: acct.Name, Recipients: []string{"S1"},
			Template: "disk-full", Variables: map[string]string{"host": "db-1", "level": "high"}})
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("%s: submit: %v %+v", provider, err, res)
		}
		if provider != channels.ProviderHTTP {
			_, err := h.App.Dispatch.Submit(ctx, dispatch.Request{Source: "api", Actor: "test", Account: acct.Name, Recipients: []string{"S1"},
				Template: "plain", Variables: map[string]string{"host": "db-1"}})
			if fe, ok := errors.AsType[*kernel.FieldError](err); !ok || fe.Field != "provider_template" {
				t.Errorf("%s with a template naming no provider code: %v, want a problem with provider_template", provider, err)
			}
		}
	}
	testenv.WaitFor(t, 30*time.Second, "an SMS by each provider", func() bool { return len(sim.Deliveries()) == len(channels.Providers) })
	got := map[string]simulator.Delivery{}
	for _, d := range sim.Deliveries() {
		got[d.Provider] = d
	}
	for _, provider := range channels.Providers {
		d := got[provider]
		names := []string{"host", "level"}
		if provider == channels.ProviderTencent {
			names = []string{"1", "2"}
		}
		want := []simulator.Param{{Name: names[0], Value: "db-1"}, {Name: names[1], Value: "high"}}
		if d.To != "13800138000" || d.Template != "SMS_100001" || d.Platform != "sms" {
			t.Errorf("%s: delivery %+v, want to 13800138000 as SMS_100001", provider, d)
		}
		if diff := cmp.Diff(want, d.Params); diff != "" {
			t.Errorf("%s: params (-want +got):\n%s", provider, diff)
		}
	}
}

// Two calls to one callee inside Tencent's 30 seconds: the account starts from the
// provider's per-number limits, so the second waits as throttled, due when the window
// opens, rather than being placed and refused.
func TestSecondCallHeldByPerNumberLimit(t *testing.T) {
	t.Parallel()
	h := startHerald(t, testEnv(t))
	ctx := context.Background()
	sim := simulator.NewWithOptions(simulator.Faults{}, simulator.Options{Seed: 7})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	store := h.App.Store
	if err := store.Directory().CreateRecipient(ctx, &directory.Recipient{ExternalID: "V1", Name: "Wang", OrgType: directory.Branch,
		Mobile: "13900139000", Active: true}); err != nil {
		t.Fatal(err)
	}
	if err := store.Templates().CreateTemplate(ctx, &templates.Template{Name: "call", MsgType: "text", Body: "{{.host}} 故障，确认请按 1",
		Variables: templates.StringList{"host"}, ProviderTemplate: "1234567", ProviderParams: templates.StringList{"1={{.host}}"}}); err != nil {
		t.Fatal(err)
	}
	cfg := phoneConfig(srv.URL, channels.ProviderTencent, true)
	acct := &sending.Account{Name: "voice-tencent", Platform: "voice", Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3, Healthy: true,
		Config: cfg, Limits: sending.Limits{PerRecipientPer30s: 1, PerRecipientPer10m: 2}}
	if got := delivery.DocumentedLimits("voice", cfg); got != acct.Limits {
		t.Fatalf("Tencent voice's documented limits = %+v, want %+v", got, acct.Limits)
	}
	if err := store.Sending().SaveAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := h.App.Dispatch.Submit(ctx, dispatch.Request{Source: "api", Actor: "test", Account: acct.Name, Recipients: []string{"V1"},
			Template: "call", Variables: map[string]string{"host": "db-1"}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.WaitFor(t, 30*time.Second, "one call placed and the other held", func() bool {
		counts := statusCounts(t, h, acct.ID)
		return counts["sent"] == 1 && counts["pending"]+counts["failed"] == 1 && heldFor(t, h, acct.ID) >= 20*time.Second
	})
	if n := len(sim.Deliveries()); n != 1 {
		t.Errorf("the simulator placed %d calls, want 1 (the second held by Herald)", n)
	}
	// A held call is placed once its window has passed. Shown on a window of a second,
	// not Tencent's thirty (the limiter counts on Redis's clock, which a test cannot
	// move): the same account's settings with one call a second to each number, against
	// a simulator that leaves the per-number limits to Herald.
	quick := simulator.NewWithOptions(simulator.Faults{}, simulator.Options{Seed: 7, NoPlatformLimits: true})
	quickSrv := httptest.NewServer(quick.Handler())
	t.Cleanup(quickSrv.Close)
	fast := &sending.Account{Name: "voice-tencent-fast", Platform: "voice", Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3,
		Healthy: true, Config: phoneConfig(quickSrv.URL, channels.ProviderTencent, true), Limits: sending.Limits{PerRecipientPerSecond: 1}}
	if err := store.Sending().SaveAccount(ctx, fast); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := h.App.Dispatch.Submit(ctx, dispatch.Request{Source: "api", Actor: "test", Account: fast.Name, Recipients: []string{"V1"},
			Template: "call", Variables: map[string]string{"host": "db-2"}}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.WaitFor(t, 30*time.Second, "both calls placed", func() bool { return statusCounts(t, h, fast.ID)["sent"] == 2 })
	calls := quick.Deliveries()
	if len(calls) != 2 {
		t.Fatalf("the simulator placed %d calls, want 2", len(calls))
	}
	if gap := time.Duration(calls[1].ReceivedAtMs-calls[0].ReceivedAtMs) * time.Millisecond; gap < 900*time.Millisecond {
		t.Errorf("the second call came %s after the first, inside the callee's second", gap)
	}
}

// heldFor is how long after now the account's waiting throttled message is due (0
// when none waits).
func heldFor(t *testing.T, h *running, accountID int64) time.Duration {
	t.Helper()
	var due time.Time
	err := h.App.Store.SQL().QueryRow("SELECT next_attempt_at FROM messages WHERE account_id = ? AND status IN ('pending','failed') AND error_class = 'throttled'",
		accountID).Scan(&due)
	if err != nil {
		return 0
	}
	return time.Until(due)
}
