package channels

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"herald/simulator"
)

// phoneAccount is the config of an sms or voice account of provider pointed at rig,
// with the simulator's own keys.
func phoneAccount(rig *simRig, provider string, voice bool) map[string]string {
	cfg := map[string]string{"provider": provider}
	switch provider {
	case ProviderAliyun:
		cfg["access_key_id"], cfg["access_key_secret"], cfg["base_url"] = simulator.DefaultAliyunKey, simulator.DefaultAliyunKey+"-secret", rig.url+"/aliyun"
	case ProviderTencent:
		cfg["secret_id"], cfg["secret_key"], cfg["base_url"], cfg["sdk_app_id"] = simulator.DefaultTencentKey, simulator.DefaultTencentKey+"-secret", rig.url+"/tencent", "1400000001"
	case ProviderHTTP:
		cfg["url"], cfg["success_path"], cfg["success_value"] = rig.url+"/phone-gateway/sms", "code", "0"
		if voice {
			cfg["url"] = rig.url + "/phone-gateway/call"
		}
	}
	if voice {
		cfg["callback_token"] = "cb-token-1"
		if provider == ProviderAliyun {
			cfg["called_show_number"] = "05710000000"
		}
	} else if provider != ProviderHTTP {
		cfg["sign_name"] = "Herald"
	}
	return cfg
}

// phoneSender builds the adapter of an sms or voice account.
func phoneSender(t *testing.T, platform string, cfg map[string]string) Sender {
	t.Helper()
	s, err := NewRegistry(nil).Sender(Account{ID: 1, Name: "p", Platform: platform, Config: cfg, AllowPrivateNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// templated is a message sent as a provider template with two parameters.
func templated(id, to string) Message {
	return Message{ID: id, To: to, Content: "【Herald】Disk full on db-1, level high", ProviderTemplate: "SMS_100001",
		Params: []Param{{Name: "host", Value: "db-1"}, {Name: "level", Value: "high"}}}
}

// An SMS by each provider reaches the simulator, which checked its signature, with
// the number, the template and its parameters in order (Tencent numbers them).
func TestSMSByEachProvider(t *testing.T) {
	t.Parallel()
	for _, provider := range Providers {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			rig := startSim(t, simulator.Options{})
			s := phoneSender(t, "sms", phoneAccount(rig, provider, false))
			receipt, err := s.Send(context.Background(), templated("m-1", "13800138000"))
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			got := rig.sim.Deliveries()
			if len(got) != 1 {
				t.Fatalf("deliveries = %+v, want one", got)
			}
			d := got[0]
			names := []string{"host", "level"}
			if provider == ProviderTencent {
				names = []string{"1", "2"}
			}
			if provider == ProviderHTTP {
				d.Content = "" // the gateway receives the text too
			}
			want := simulator.Delivery{Platform: "sms", Provider: provider, To: "13800138000", RequestID: "m-1",
				Template: "SMS_100001", Params: []simulator.Param{{Name: names[0], Value: "db-1"}, {Name: names[1], Value: "high"}},
				ProviderMsgID: receipt.ProviderMessageID}
			d.ReceivedAtMs = 0
			if !reflect.DeepEqual(d, want) {
				t.Errorf("delivery = %+v\nwant       %+v", d, want)
			}
		})
	}
}

// A wrong key is refused as the provider refuses it, and classified auth; the
// connection test names the key refused.
func TestPhoneWrongKeyIsAuth(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	cases := []struct {
		provider, key, value, code, field string
	}{
		{ProviderAliyun, "access_key_secret", "wrong", "SignatureDoesNotMatch", "config.access_key_secret"},
		{ProviderAliyun, "access_key_id", "LTAInobody", "InvalidAccessKeyId.NotFound", "config.access_key_id"},
		{ProviderTencent, "secret_key", "wrong", "AuthFailure.SignatureFailure", "config.secret_key"},
		{ProviderTencent, "secret_id", "AKIDnobody", "AuthFailure.SecretIdNotFound", "config.secret_id"},
	}
	for _, tc := range cases {
		for _, platform := range []string{"sms", "voice"} {
			cfg := phoneAccount(rig, tc.provider, platform == "voice")
			cfg[tc.key] = tc.value
			_, err := phoneSender(t, platform, cfg).Send(context.Background(), templated("m-2", "13800138000"))
			ce, ok := errors.AsType[*Error](err)
			if !ok || ce.Class != Auth || ce.Code != tc.code {
				t.Errorf("%s %s with a wrong %s: %v, want auth (%s)", platform, tc.provider, tc.key, err, tc.code)
			}
			res := NewRegistry(nil).Probe(context.Background(), Account{Name: "p", Platform: platform, Config: cfg, AllowPrivateNetwork: true})
			if res.OK || !strings.Contains(res.Summary.String(), tc.field) {
				t.Errorf("%s %s probe with a wrong %s: %+v, want a refusal naming %s", platform, tc.provider, tc.key, res.Summary, tc.field)
			}
		}
	}
	if len(rig.sim.Deliveries()) != 0 {
		t.Errorf("deliveries = %+v, want none", rig.sim.Deliveries())
	}
	for _, provider := range []string{ProviderAliyun, ProviderTencent} {
		res := NewRegistry(nil).Probe(context.Background(), Account{Name: "p", Platform: "sms", Config: phoneAccount(rig, provider, false), AllowPrivateNetwork: true})
		if !res.OK {
			t.Errorf("%s probe with the right keys: %+v", provider, res)
		}
	}
}

// reportSink is Herald's callback endpoint as far as a voice adapter sees it: what the
// provider posts, as received.
type reportSink struct {
	mu    sync.Mutex
	posts []sinkPost
	url   string
}

type sinkPost struct {
	header http.Header
	query  url.Values
	body   []byte
}

func newReportSink(t *testing.T) *reportSink {
	k := &reportSink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		k.mu.Lock()
		k.posts = append(k.posts, sinkPost{r.Header.Clone(), r.URL.Query(), body})
		k.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	k.url = srv.URL + "/callbacks/voice/p?token=cb-token-1"
	return k
}

// reports reads every post the sink received through the adapter.
func (k *reportSink) reports(t *testing.T, r VoiceReporter) []VoiceReport {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []VoiceReport
	for _, p := range k.posts {
		got, err := r.Reports(p.header, p.query, p.body)
		if err != nil {
			t.Fatalf("Reports(%s): %v", p.body, err)
		}
		for i := range got {
			got[i].At = time.Time{}
		}
		out = append(out, got...)
	}
	return out
}

// A call by each provider is recorded, its callee played as set, and its report,
// posted in the provider's format to the account's callback URL, reads as what
// happened; a report with another token is refused as forged.
func TestVoiceCallByEachProvider(t *testing.T) {
	t.Parallel()
	for _, provider := range Providers {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			rig := startSim(t, simulator.Options{})
			sink := newReportSink(t)
			cfg := phoneAccount(rig, provider, true)
			key := cfg["access_key_id"] + cfg["secret_id"]
			control(t, rig, map[string]any{
				"keys":    []map[string]string{{"provider": provider, "key_id": key, "secret": cfg["access_key_secret"] + cfg["secret_key"], "callback_url": sink.url}},
				"callees": map[string]string{"13800138001": "press_1", "13800138002": "no_answer", "13800138003": "busy"},
			})
			s := phoneSender(t, "voice", cfg)
			ids := map[string]string{}
			for i, to := range []string{"13800138001", "13800138002", "13800138003"} {
				m := templated("call-"+to, to)
				m.Actions = AlertActions()
				m.ProviderTemplate = "TTS_200001"
				receipt, err := s.Send(context.Background(), m)
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				ids[to] = receipt.ProviderMessageID
			}
			rig.sim.WaitReports()
			if n := len(rig.sim.Deliveries()); n != 3 {
				t.Fatalf("recorded %d calls, want 3", n)
			}
			got := sink.reports(t, s.(VoiceReporter))
			want := []VoiceReport{
				{MessageID: "call-13800138001", CallID: ids["13800138001"], Callee: "13800138001", Outcome: VoiceAnswered, Keys: "1"},
				{MessageID: "call-13800138002", CallID: ids["13800138002"], Callee: "13800138002", Outcome: VoiceNoAnswer},
				{MessageID: "call-13800138003", CallID: ids["13800138003"], Callee: "13800138003", Outcome: VoiceBusy},
			}
			if provider == ProviderTencent {
				// Tencent names a call by its CallId alone, and reports the key pressed
				// and the call's end apart.
				want = []VoiceReport{
					{CallID: ids["13800138001"], Callee: "13800138001", Outcome: VoiceAnswered, Keys: "1"},
					{CallID: ids["13800138001"], Callee: "13800138001", Outcome: VoiceAnswered},
					{CallID: ids["13800138002"], Callee: "13800138002", Outcome: VoiceNoAnswer},
					{CallID: ids["13800138003"], Callee: "13800138003", Outcome: VoiceBusy},
				}
			}
			if !sameReports(got, want) {
				t.Errorf("reports = %+v\nwant      %+v", got, want)
			}
			sink.mu.Lock()
			first := sink.posts[0]
			sink.mu.Unlock()
			for _, forged := range []url.Values{{"token": {"cb-token-2"}}, {}} {
				if _, err := s.(VoiceReporter).Reports(first.header, forged, first.body); !errors.Is(err, ErrForgedReport) {
					t.Errorf("a report with token %v: %v, want ErrForgedReport", forged, err)
				}
			}
		})
	}
}

// sameReports compares reports whatever the order their posts arrived in.
func sameReports(got, want []VoiceReport) bool {
	if len(got) != len(want) {
		return false
	}
	left := append([]VoiceReport(nil), want...)
	for _, g := range got {
		found := false
		for i, w := range left {
			if g == w {
				left = append(left[:i], left[i+1:]...)
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// control posts settings to the simulator's phone control endpoint.
func control(t *testing.T, rig *simRig, body any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(rig.url+"/_sim/phone", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /_sim/phone: %d %s", resp.StatusCode, msg)
	}
}

// Past a provider's per-number limit the simulator refuses the way the provider does,
// and the adapter reads a rate limit with the wait the window gives.
func TestPhonePerNumberLimits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		provider, platform, code string
		wait                     time.Duration
	}{
		{ProviderAliyun, "voice", "isv.BUSINESS_LIMIT_CONTROL", time.Minute},
		{ProviderAliyun, "sms", "isv.BUSINESS_LIMIT_CONTROL", time.Minute},
		{ProviderTencent, "voice", "LimitExceeded.PhoneNumberThirtySecondLimit", 30 * time.Second},
		{ProviderTencent, "sms", "LimitExceeded.PhoneNumberThirtySecondLimit", 30 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.provider+"_"+tc.platform, func(t *testing.T) {
			t.Parallel()
			clock := newTestClock()
			rig := startSim(t, simulator.Options{Now: clock.Now})
			s := phoneSender(t, tc.platform, phoneAccount(rig, tc.provider, tc.platform == "voice"))
			if _, err := s.Send(context.Background(), templated("m-1", "13800138000")); err != nil {
				t.Fatal(err)
			}
			_, err := s.Send(context.Background(), templated("m-2", "+8613800138000"))
			ce, ok := errors.AsType[*Error](err)
			if !ok || ce.Class != RateLimited || ce.Code != tc.code || ce.RetryAfter != tc.wait {
				t.Fatalf("second at once: %v, want rate_limited %s after %s", err, tc.code, tc.wait)
			}
			if _, err := s.Send(context.Background(), templated("m-3", "13900139000")); err != nil {
				t.Errorf("another number: %v", err)
			}
			clock.Advance(tc.wait)
			if _, err := s.Send(context.Background(), templated("m-4", "13800138000")); err != nil {
				t.Errorf("after the window: %v", err)
			}
			if n := len(rig.sim.Deliveries()); n != 3 {
				t.Errorf("recorded %d, want 3", n)
			}
		})
	}
}

// Settings are checked per provider: the provider's keys required, another's refused,
// and a number that is not a number refused as permanent, nothing sent.
func TestPhoneSettingsAndNumbers(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	cases := []struct {
		name   string
		change func(map[string]string)
		field  string
	}{
		{"aliyun without a secret", func(c map[string]string) { delete(c, "access_key_secret") }, "config.access_key_secret"},
		{"aliyun sms without a sign name", func(c map[string]string) { delete(c, "sign_name") }, "config.sign_name"},
		{"a tencent key on aliyun", func(c map[string]string) { c["secret_id"] = "AKID" }, "config.secret_id"},
		{"no provider", func(c map[string]string) { delete(c, "provider") }, "config.provider"},
		{"an unknown provider", func(c map[string]string) { c["provider"] = "pigeon" }, "config.provider"},
	}
	for _, tc := range cases {
		cfg := phoneAccount(rig, ProviderAliyun, false)
		tc.change(cfg)
		err := ValidateConfig("sms", cfg, true)
		se, ok := errors.AsType[*SettingError](err)
		if !ok || se.Field != tc.field {
			t.Errorf("%s: %v, want a problem with %s", tc.name, err, tc.field)
		}
	}
	gw := phoneAccount(rig, ProviderHTTP, false)
	gw["body"] = "{{.Nope"
	if se, ok := errors.AsType[*SettingError](ValidateConfig("sms", gw, true)); !ok || se.Field != "config.body" {
		t.Errorf("a body template that does not parse: want a problem with config.body")
	}
	voice := phoneAccount(rig, ProviderTencent, true)
	delete(voice, "callback_token")
	if se, ok := errors.AsType[*SettingError](ValidateConfig("voice", voice, true)); !ok || se.Field != "config.callback_token" {
		t.Errorf("voice without a callback token: want a problem with config.callback_token")
	}
	for _, provider := range Providers {
		_, err := phoneSender(t, "sms", phoneAccount(rig, provider, false)).Send(context.Background(), templated("m", "call me"))
		if ce, ok := errors.AsType[*Error](err); !ok || ce.Class != Permanent {
			t.Errorf("%s to a word: %v, want permanent", provider, err)
		}
	}
	if len(rig.sim.Deliveries()) != 0 {
		t.Errorf("deliveries = %+v, want none", rig.sim.Deliveries())
	}
}

// A call's parameters are cut, last first, to the provider's TTS cap.
func TestTrimSpoken(t *testing.T) {
	got := trimSpoken([]Param{{"a", strings.Repeat("甲", 8)}, {"b", strings.Repeat("乙", 8)}}, 10)
	if got[0].Value != strings.Repeat("甲", 8) || got[1].Value != "乙…" {
		t.Errorf("trimmed = %+v", got)
	}
}

// An SMS's billing: 70 characters a message and 67 a segment with Chinese, 160 and 153
// for GSM text alone.
func TestSegments(t *testing.T) {
	cases := []struct {
		text            string
		chars, segments int
	}{
		{"", 0, 0},
		{strings.Repeat("a", 160), 160, 1},
		{strings.Repeat("a", 161), 161, 2},
		{strings.Repeat("a", 306), 306, 2},
		{strings.Repeat("a", 307), 307, 3},
		{strings.Repeat("告", 70), 70, 1},
		{strings.Repeat("告", 71), 71, 2},
		{strings.Repeat("告", 134), 134, 2},
		{strings.Repeat("告", 135), 135, 3},
		{strings.Repeat("a", 100) + "警", 101, 2},
	}
	for _, tc := range cases {
		if chars, segments := Segments(tc.text); chars != tc.chars || segments != tc.segments {
			t.Errorf("Segments(%d runes) = %d, %d; want %d, %d", len([]rune(tc.text)), chars, segments, tc.chars, tc.segments)
		}
	}
}

// An in-house gateway's answer reads as its account says: a success path with another
// value is a permanent failure, its 429 a rate limit, its 401 auth, its 500 transient.
func TestPhoneGatewaySuccessRule(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	s := phoneSender(t, "sms", phoneAccount(rig, ProviderHTTP, false))
	for _, tc := range []struct {
		faults simulator.Faults
		want   Class
	}{
		{simulator.Faults{RejectRate: 1}, Permanent},
		{simulator.Faults{ThrottleRate: 1}, RateLimited},
		{simulator.Faults{AuthFail: true}, Auth},
		{simulator.Faults{FailRate: 1}, Transient},
	} {
		rig.sim.SetFaults(tc.faults)
		_, err := s.Send(context.Background(), templated("m", "13800138000"))
		if ce, ok := errors.AsType[*Error](err); !ok || ce.Class != tc.want {
			t.Errorf("faults %+v: %v, want %s", tc.faults, err, tc.want)
		}
	}
	if n := len(rig.sim.Deliveries()); n != 0 {
		t.Errorf("recorded %d, want none", n)
	}
}
