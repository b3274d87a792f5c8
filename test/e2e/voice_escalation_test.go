package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/channels"
	"herald/directory"
	"herald/dispatch"
	"herald/internal/testenv"
	calls "herald/phone"
	"herald/sending"
	"herald/simulator"
	"herald/templates"
)

// voiceRig is one Herald with a simulator that plays the voice providers and their
// callees, reporting each call to Herald's /callbacks/voice/<account>.
type voiceRig struct {
	r      *running
	sim    *simulator.Simulator
	simURL string
}

func newVoiceRig(t *testing.T) *voiceRig {
	t.Helper()
	r := startHerald(t, testEnv(t))
	sim := simulator.New(simulator.Faults{})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return &voiceRig{r: r, sim: sim, simURL: srv.URL}
}

// voiceAccount saves a voice account of provider pointed at the simulator, with the
// simulator's keys, and tells the simulator to report its calls to Herald.
func (v *voiceRig) voiceAccount(t *testing.T, name, provider string, limits sending.Limits, isDefault bool) {
	t.Helper()
	cfg := map[string]string{"provider": provider, "callback_token": "cb-" + name}
	key := simulator.PhoneKey{Provider: provider, CallbackURL: v.r.URL + "/callbacks/voice/" + name + "?token=cb-" + name}
	switch provider {
	case channels.ProviderAliyun:
		cfg["access_key_id"], cfg["access_key_secret"], cfg["base_url"] = simulator.DefaultAliyunKey, simulator.DefaultAliyunKey+"-secret", v.simURL+"/aliyun"
		key.KeyID, key.Secret = simulator.DefaultAliyunKey, simulator.DefaultAliyunKey+"-secret"
	case channels.ProviderTencent:
		cfg["secret_id"], cfg["secret_key"], cfg["base_url"], cfg["sdk_app_id"] = simulator.DefaultTencentKey, simulator.DefaultTencentKey+"-secret", v.simURL+"/tencent", "1400000001"
		key.KeyID, key.Secret = simulator.DefaultTencentKey, simulator.DefaultTencentKey+"-secret"
	case channels.ProviderHTTP:
		cfg["url"], cfg["success_path"], cfg["success_value"] = v.simURL+"/phone-gateway/call", "code", "0"
	}
	if err := v.r.App.Store.Sending().SaveAccount(context.Background(), &sending.Account{Name: name, Platform: "voice", Enabled: true, IsDefault: isDefault,
		MaxAttempts: 3, AllowPrivateNetwork: true, Config: cfg, Limits: limits}); err != nil {
		t.Fatal(err)
	}
	v.control(t, map[string]any{"keys": []simulator.PhoneKey{key}})
}

// person saves a branch member with a mobile number, who behaves on a call as said
// (simulator.CalleePress1, …).
func (v *voiceRig) person(t *testing.T, ext, name, mobile, behaviour string) {
	t.Helper()
	if err := v.r.App.Store.Directory().CreateRecipient(context.Background(), &directory.Recipient{ExternalID: ext, Name: name,
		OrgType: directory.Branch, Mobile: mobile, Active: true}); err != nil {
		t.Fatal(err)
	}
	v.control(t, map[string]any{"callees": map[string]string{mobile: behaviour}})
}

func (v *voiceRig) control(t *testing.T, body any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(v.simURL+"/_sim/phone", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /_sim/phone: %d", resp.StatusCode)
	}
}

// policy saves an escalation policy.
func (v *voiceRig) policy(t *testing.T, name string, notifyOnAck bool, steps ...alert.PolicyStep) {
	t.Helper()
	if _, err := v.r.App.Dispatch.Alerts().CreatePolicy(context.Background(), audit.System("test"),
		alert.EscalationPolicy{Name: name, Steps: steps, NotifyOnAck: notifyOnAck}); err != nil {
		t.Fatal(err)
	}
}

// open sends an alert on the sandbox naming nobody, so its first step fires at once;
// with a template (templated), else as text.
func (v *voiceRig) open(t *testing.T, policy string, template ...string) int64 {
	t.Helper()
	req := dispatch.Request{Source: "api", Actor: "test", Platform: "sandbox", Subject: "核心系统告警", Text: "转账交易失败率 12%",
		Ack: &dispatch.AckRequest{Policy: policy}}
	if len(template) > 0 {
		req.Subject, req.Text, req.Template, req.Variables = "", "", template[0], map[string]string{"what": "转账交易失败率 12%"}
	}
	res, err := v.r.App.Dispatch.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Alert == nil {
		t.Fatal("the send opened no alert")
	}
	return res.Alert.ID
}

// templated saves a template whose calls go as the provider's template code, its
// parameter mapped from the variable what.
func (v *voiceRig) templated(t *testing.T, name, code, param string) {
	t.Helper()
	if err := v.r.App.Store.Templates().CreateTemplate(context.Background(), &templates.Template{Name: name, MsgType: "text",
		Body: "核心系统告警：{{.what}}，确认请按 1", Variables: templates.StringList{"what"}, ProviderTemplate: code,
		ProviderParams: templates.StringList{param + "={{.what}}"}}); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls what until it holds, for at most 15 s (a call's report comes within
// the simulator's 20 ms delay).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 15 s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (v *voiceRig) alert(t *testing.T, id int64) *alert.Alert {
	t.Helper()
	a, err := alert.Of(v.r.App.Store).AlertByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// calls are the alert's calls as "<person> <outcome> <keys>".
func (v *voiceRig) calls(t *testing.T, id int64) []string {
	t.Helper()
	list, err := calls.Of(v.r.App.Store).CallsOf(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list {
		out = append(out, strings.TrimSpace(c.Person+" "+c.Outcome+" "+c.Keys+" "+c.Reason))
	}
	return out
}

// callsTo counts the calls the simulator received to a number.
func (v *voiceRig) callsTo(number string) int {
	n := 0
	for _, d := range v.sim.Deliveries() {
		if d.Platform == "voice" && strings.HasSuffix(d.To, number) {
			n++
		}
	}
	return n
}

// A call by each provider, pressed 1 by its callee, acknowledges the alert as that
// person via voice: the next step never fires, and the audit log says so. The same
// report again changes nothing.
func TestVoiceStepAcknowledgedByKeypad(t *testing.T) {
	t.Parallel()
	v := newVoiceRig(t)
	ctx := context.Background()
	for i, provider := range []string{channels.ProviderAliyun, channels.ProviderTencent} {
		t.Run(provider, func(t *testing.T) {
			acct, caller, backup := "voice-"+provider, "V100"+string(rune('1'+i)), "V200"+string(rune('1'+i))
			mobile := "1390000000" + string(rune('1'+i))
			v.voiceAccount(t, acct, provider, sending.Limits{}, false)
			v.person(t, caller, "值班员"+provider, mobile, simulator.CalleePress1)
			v.person(t, backup, "备岗"+provider, "1391111111"+string(rune('1'+i)), simulator.CalleeAnswer)
			v.policy(t, "keypad-"+provider, true, alert.PolicyStep{Targets: []string{caller}, Wait: "10m", Via: acct},
				alert.PolicyStep{Targets: []string{backup}, Wait: "10m"})
			code, param := "TTS_300001", "what"
			if provider == channels.ProviderTencent {
				code, param = "1300001", "1"
			}
			v.templated(t, "alarm-"+provider, code, param)
			id := v.open(t, "keypad-"+provider, "alarm-"+provider)
			waitFor(t, "the alert to be acknowledged by keypad", func() bool { return v.alert(t, id).State == alert.AlertAcknowledged })
			a := v.alert(t, id)
			if a.AcknowledgedBy != caller || a.AcknowledgedVia != alert.AckViaVoice {
				t.Errorf("acknowledged by %q via %q, want %s via voice", a.AcknowledgedBy, a.AcknowledgedVia, caller)
			}
			waitFor(t, "the call's outcome", func() bool { got := v.calls(t, id); return len(got) == 1 && got[0] == caller+" answered 1" })
			b := newBrowser(t, v.r.URL)
			b.Login("admin", testAdminPassword)
			if _, page := b.Do("GET", "/alerts/"+itoa(id), nil, map[string]string{"Accept-Language": "zh-CN"}); !strings.Contains(page, "已接听，按 1 确认") ||
				!strings.Contains(page, "通过电话按 1") || !strings.Contains(page, `<span class="hint mono">`+acct+`</span>`) {
				t.Errorf("the alert page in Chinese does not say the call was answered with 1, that the acknowledgment came by phone, or how step 1 went:\n%s", page)
			}
			_, steps, err := v.r.App.Dispatch.Alerts().Alert(ctx, audit.System("test"), id)
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) != 2 || steps[1].FiredAt != nil || steps[1].CancelledAt == nil {
				t.Errorf("steps %+v, want step 2 cancelled, never fired", steps)
			}
			var params string
			if err := v.r.App.Store.SQL().QueryRow("SELECT params FROM audit_log WHERE action = ? AND target_id = ?", "alert.acknowledge",
				a.ID).Scan(&params); err != nil || !strings.Contains(params, `"via":"voice"`) {
				t.Errorf("the acknowledgment's audit entry: %s (%v), want it via voice", params, err)
			}
			// An alert sent as text has no provider template to call with: the step calls
			// nobody, saying why, and the next comes due at once.
			plain := v.open(t, "keypad-"+provider)
			waitFor(t, "the plain alert's steps", func() bool {
				_, steps, err := v.r.App.Dispatch.Alerts().Alert(ctx, audit.System("test"), plain)
				return err == nil && len(steps) == 2 && steps[0].SkippedReason == alert.SkipViaUnfit && steps[1].FiredAt != nil
			})
			// The provider's report of the same call again changes nothing.
			placed, _ := calls.Of(v.r.App.Store).CallsOf(ctx, id)
			again, err := calls.NewSwitchboard(v.r.App.Store, v.r.App.Dispatch.Alerts(), nil, nil, nil).Report(ctx,
				audit.System(calls.ActorVoiceCallback), placed[0].AccountID,
				channels.VoiceReport{MessageID: placed[0].MessageID, Outcome: channels.VoiceAnswered, Keys: "1"})
			if err != nil || again {
				t.Errorf("the same report again: %v, %v; want nothing new", again, err)
			}
		})
	}
}

// notices are the alert's messages as "<person> <platform>", oldest first.
func (v *voiceRig) notices(t *testing.T, id int64) []string {
	t.Helper()
	return testenv.QueryStrings(t, v.r.App.Store.SQL(), `SELECT r.external_id, m.platform FROM messages m
		JOIN recipients r ON r.id = m.recipient_id WHERE m.alert_id = ? ORDER BY m.created_at, m.id`, id)
}

// A call nobody answers, on a step that advances on no answer, fires the next step at
// once rather than after its 10 minutes; a late copy of the report fires nothing more.
// The next step's callee presses 1, and the notice that the alert is taken goes to the
// first callee through the alert's own account, never by phone. The voice account's
// quiet hours, all day long, hold none of the calls.
func TestVoiceNoAnswerAdvancesTheNextStep(t *testing.T) {
	t.Parallel()
	v := newVoiceRig(t)
	ctx := context.Background()
	v.voiceAccount(t, "voice-ivr", channels.ProviderHTTP, sending.Limits{}, true)
	// Quiet hours all day long: an escalation's calls are high priority, which they never hold.
	acct, err := v.r.App.Store.Sending().AccountByName(ctx, "voice-ivr")
	if err != nil {
		t.Fatal(err)
	}
	acct.QuietHours = sending.QuietHours{Start: "00:00", End: "23:59"}
	if err := v.r.App.Store.Sending().SaveAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	v.person(t, "N1001", "陈静", "13700000001", simulator.CalleeNoAnswer)
	v.person(t, "N1002", "刘洋", "13700000002", simulator.CalleePress1)
	v.person(t, "N1003", "赵磊", "13700000003", simulator.CalleeAnswer)
	v.policy(t, "ring-on", true,
		alert.PolicyStep{Targets: []string{"N1001"}, Wait: "10m", Via: "voice-ivr", AdvanceOnNoAnswer: true},
		alert.PolicyStep{Targets: []string{"N1002"}, Wait: "10m", Via: "voice"},
		alert.PolicyStep{Targets: []string{"N1003"}, Wait: "10m"})
	started := time.Now()
	id := v.open(t, "ring-on")
	waitFor(t, "the second callee to acknowledge", func() bool { return v.alert(t, id).State == alert.AlertAcknowledged })
	if took := time.Since(started); took > 10*time.Second {
		t.Errorf("the alert took %s to reach the second step and be acknowledged, want seconds", took)
	}
	a := v.alert(t, id)
	if a.AcknowledgedBy != "N1002" || a.AcknowledgedVia != alert.AckViaVoice || a.Step != 2 {
		t.Errorf("alert %+v, want acknowledged by N1002 via voice at step 2", a)
	}
	waitFor(t, "the calls' outcomes", func() bool { return strings.Join(v.calls(t, id), ",") == "N1001 no_answer,N1002 answered 1" })
	waitFor(t, "the notice that the alert is taken", func() bool { return len(v.notices(t, id)) == 3 })
	wantNotices := []string{"N1001 voice", "N1002 voice", "N1001 sandbox"}
	if got := v.notices(t, id); strings.Join(got, ",") != strings.Join(wantNotices, ",") {
		t.Errorf("notices %q, want %q: the notice that the alert is taken never by phone", got, wantNotices)
	}
	// The no-answer report again, late: nothing more fires.
	list, _ := calls.Of(v.r.App.Store).CallsOf(ctx, id)
	again, err := calls.NewSwitchboard(v.r.App.Store, v.r.App.Dispatch.Alerts(), nil, nil, nil).Report(ctx,
		audit.System(calls.ActorVoiceCallback), list[0].AccountID, channels.VoiceReport{MessageID: list[0].MessageID, Outcome: channels.VoiceNoAnswer})
	if err != nil || again {
		t.Errorf("the no-answer report again: %v, %v; want nothing new", again, err)
	}
	if fired, err := v.r.App.Dispatch.Alerts().AdvanceOnNoAnswer(ctx, id, 1, 1); err != nil || fired {
		t.Errorf("advancing step 1 again: %v, %v; want nothing fired", fired, err)
	}
	_, steps, err := v.r.App.Dispatch.Alerts().Alert(ctx, audit.System("test"), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 || steps[1].FiredAt == nil || steps[2].FiredAt != nil || steps[2].CancelledAt == nil {
		t.Errorf("steps %+v, want step 2 fired and step 3 cancelled", steps)
	}
}

// A call held by the account's per-number limit waits, and the alert's page says why;
// the alert is resolved meanwhile, and the call is never placed: cancelled, with the
// reason on the page.
func TestVoiceCallOfAResolvedAlertIsNotPlaced(t *testing.T) {
	t.Parallel()
	v := newVoiceRig(t)
	ctx := context.Background()
	v.voiceAccount(t, "voice-limited", channels.ProviderHTTP, sending.Limits{PerRecipientPerMinute: 1}, false)
	v.person(t, "R1001", "孙丽", "13600000001", simulator.CalleeAnswer)
	v.policy(t, "ring-once", false, alert.PolicyStep{Targets: []string{"R1001"}, Wait: "10m", Via: "voice-limited"})
	first := v.open(t, "ring-once")
	waitFor(t, "the first call", func() bool { return v.callsTo("13600000001") == 1 })
	second := v.open(t, "ring-once")
	var status, class string
	waitFor(t, "the second call to wait for the limit", func() bool {
		err := v.r.App.Store.SQL().QueryRow("SELECT status, error_class FROM messages WHERE alert_id = ?", second).Scan(&status, &class)
		return err == nil && class == string(channels.Throttled)
	})
	b := newBrowser(t, v.r.URL)
	b.Login("admin", testAdminPassword)
	_, page := b.Get("/alerts/" + itoa(second))
	if !strings.Contains(page, "held-call") || !strings.Contains(page, "per person per minute") {
		t.Errorf("the alert page does not say the call waits for the per-number limit:\n%s", page)
	}
	if _, err := v.r.App.Dispatch.Alerts().ResolveAlert(ctx, audit.System("test"), second, "R1001", alert.AckViaAPI, "fixed"); err != nil {
		t.Fatal(err)
	}
	if err := v.r.App.Store.SQL().QueryRow("SELECT status FROM messages WHERE alert_id = ?", second).Scan(&status); err != nil || status != "cancelled" {
		t.Errorf("the held call is %s (%v), want cancelled", status, err)
	}
	if got := v.calls(t, second); len(got) != 1 || got[0] != "R1001 not_placed  alert_resolved" {
		t.Errorf("calls %q, want R1001 not placed because the alert was resolved", got)
	}
	_, page = b.Get("/alerts/" + itoa(second))
	if !strings.Contains(page, "not placed: the alert was resolved first") {
		t.Errorf("the alert page does not say the call was not placed:\n%s", page)
	}
	if n := v.callsTo("13600000001"); n != 1 {
		t.Errorf("%d calls reached R1001, want the first alert's alone", n)
	}
	_ = first
}

// A callback with a token Herald does not hold, or to an account that is not a voice
// account, is refused with 403 and changes nothing.
func TestVoiceCallbackForgedIsRefused(t *testing.T) {
	t.Parallel()
	v := newVoiceRig(t)
	ctx := context.Background()
	v.voiceAccount(t, "voice-guarded", channels.ProviderHTTP, sending.Limits{}, false)
	v.control(t, map[string]any{"report_delay": "1h"})
	v.person(t, "F1001", "周敏", "13500000001", simulator.CalleePress1)
	v.policy(t, "guarded", false, alert.PolicyStep{Targets: []string{"F1001"}, Wait: "10m", Via: "voice-guarded"})
	id := v.open(t, "guarded")
	waitFor(t, "the call", func() bool { return v.callsTo("13500000001") == 1 })
	list, _ := calls.Of(v.r.App.Store).CallsOf(ctx, id)
	if len(list) != 1 {
		t.Fatalf("calls %+v, want one", list)
	}
	forged := `{"message_id":"` + list[0].MessageID + `","callee":"13500000001","outcome":"answered","keys":"1"}`
	for _, target := range []string{"/callbacks/voice/voice-guarded?token=not-the-token", "/callbacks/voice/voice-guarded",
		"/callbacks/voice/sandbox?token=cb-voice-guarded", "/callbacks/voice/nobody?token=cb-voice-guarded"} {
		resp, err := http.Post(v.r.URL+target, "application/json", strings.NewReader(forged))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s: %d, want 403", target, resp.StatusCode)
		}
	}
	if a := v.alert(t, id); a.State != alert.AlertOpen {
		t.Errorf("the alert is %s after forged reports, want open", a.State)
	}
	if got := v.calls(t, id); len(got) != 1 || got[0] != "F1001" {
		t.Errorf("calls %q after forged reports, want F1001 awaiting a report", got)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
