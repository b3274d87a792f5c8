package simulator

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"
)

// signedAliyun is a Dyvmsapi request signed with the simulator's default key, built
// by hand from Alibaba's documented rules (not the simulator's own code).
func signedAliyun(params url.Values, secret string) []byte {
	base := url.Values{"AccessKeyId": {DefaultAliyunKey}, "Format": {"JSON"}, "SignatureMethod": {"HMAC-SHA1"},
		"SignatureVersion": {"1.0"}, "SignatureNonce": {"n-" + params.Get("OutId")}, "Timestamp": {"2026-11-30T02:00:00Z"}, "Version": {"2017-05-25"}}
	for k, v := range params {
		base[k] = v
	}
	keys := make([]string, 0, len(base))
	for k := range base {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	enc := func(s string) string {
		return strings.NewReplacer("+", "%20", "*", "%2A", "%7E", "~").Replace(url.QueryEscape(s))
	}
	var pairs []string
	for _, k := range keys {
		pairs = append(pairs, enc(k)+"="+enc(base.Get(k)))
	}
	mac := hmac.New(sha1.New, []byte(secret+"&"))
	mac.Write([]byte("POST&%2F&" + enc(strings.Join(pairs, "&"))))
	base.Set("Signature", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return []byte(base.Encode())
}

// Alibaba's voice limit counts one callee and one template: a second call with the
// same template inside the minute is refused with isv.BUSINESS_LIMIT_CONTROL and the
// minute's words, another template goes through, and the same one does once the
// simulator's clock has moved a minute on.
func TestAliyunVoiceLimitPerCalleeAndTemplate(t *testing.T) {
	clock := newFakeClock()
	sim, srv := newTestServer(t, Faults{}, Options{Now: clock.Now})
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	callWith := func(id, code string) aliyunAnswer {
		t.Helper()
		body := signedAliyun(url.Values{"Action": {"SingleCallByTts"}, "CalledNumber": {"13800138000"}, "TtsCode": {code},
			"TtsParam": {`{"host":"db-1"}`}, "OutId": {id}}, DefaultAliyunKey+"-secret")
		resp, err := do(t, nil, http.MethodPost, srv.URL+"/aliyun/", form, body)
		if err != nil {
			t.Fatal(err)
		}
		var a aliyunAnswer
		if err := json.Unmarshal(resp.body, &a); err != nil {
			t.Fatalf("%s: %s", id, resp.body)
		}
		return a
	}
	if a := callWith("m1", "TTS_1"); a.Code != "OK" || a.CallID == "" {
		t.Fatalf("first call: %+v", a)
	}
	if a := callWith("m2", "TTS_1"); a.Code != "isv.BUSINESS_LIMIT_CONTROL" || !strings.Contains(a.Message, "分钟级") {
		t.Errorf("second call inside the minute: %+v, want the minute's flow control", a)
	}
	if a := callWith("m3", "TTS_2"); a.Code != "OK" {
		t.Errorf("another template: %+v", a)
	}
	clock.Advance(time.Minute)
	if a := callWith("m4", "TTS_1"); a.Code != "OK" {
		t.Errorf("after the minute: %+v", a)
	}
	if n := len(sim.Deliveries()); n != 3 {
		t.Errorf("recorded %d calls, want 3", n)
	}
	if a := callWith("m5", "TTS_3"); a.Code != "OK" {
		t.Fatalf("%+v", a)
	}
	tampered := signedAliyun(url.Values{"Action": {"SingleCallByTts"}, "CalledNumber": {"13800138000"}, "TtsCode": {"TTS_9"}, "OutId": {"m6"}}, "wrong")
	resp, _ := do(t, nil, http.MethodPost, srv.URL+"/aliyun/", form, tampered)
	if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), "SignatureDoesNotMatch") {
		t.Errorf("a wrong secret: %d %s", resp.status, resp.body)
	}
}

// The phone control refuses what it cannot play, naming it.
func TestPhoneControlRefusesBadSettings(t *testing.T) {
	_, srv := newTestServer(t, Faults{}, Options{})
	for _, body := range []string{
		`{"callees":{"13800138000":"whistle"}}`,
		`{"keys":[{"provider":"aliyun","key_id":"LTAI"}]}`,
		`{"keys":[{"provider":"pigeon","key_id":"x","secret":"y"}]}`,
		`{"keys":[{"provider":"tencent","key_id":"x","secret":"y","callback_url":"not a url"}]}`,
		`{"callee":{}}`,
	} {
		resp, err := do(t, nil, http.MethodPost, srv.URL+"/_sim/phone", nil, []byte(body))
		if err != nil || resp.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", body, resp.status, resp.body)
		}
	}
	resp, _ := do(t, nil, http.MethodPost, srv.URL+"/_sim/phone", nil, []byte(`{"callees":{"+8613800138000":"busy"},"report_delay":"1ms"}`))
	if resp.status != http.StatusNoContent {
		t.Errorf("good settings: %d %s", resp.status, resp.body)
	}
}
