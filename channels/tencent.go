package channels

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Tencent sends SMS through Tencent Cloud SMS (SendSms, 2021-01-11) and places calls
// through VMS (SendTtsVoice, 2020-09-02), with requests signed TC3-HMAC-SHA256. It is
// safe for concurrent use.
type Tencent struct {
	voice    bool
	secretID string
	secret   string
	appID    string
	signName string
	region   string
	endpoint string
	service  string // "sms" or "vms": the signature's scope
	token    string // the callback token, voice only
	client   *http.Client
	now      func() time.Time
	prefix   string
}

// newTencent is the tencent provider's adapter for a validated sms or voice config.
func newTencent(platform string, cfg map[string]string, allowPrivate bool) *Tencent {
	t := &Tencent{voice: platform == "voice", secretID: strings.TrimSpace(cfg["secret_id"]), secret: cfg["secret_key"],
		appID: strings.TrimSpace(cfg["sdk_app_id"]), signName: cfg["sign_name"], region: strings.TrimSpace(cfg["region"]),
		token: cfg["callback_token"], client: NewHTTPClient(allowPrivate, backstopTimeout), now: time.Now,
		prefix: "channels: " + platform + " tencent", service: "sms"}
	if t.region == "" {
		t.region = defaultTencentRegion
	}
	t.endpoint = strings.TrimRight(strings.TrimSpace(cfg["base_url"]), "/")
	if t.voice {
		t.service = "vms"
	}
	if t.endpoint == "" {
		t.endpoint = DefaultTencentSMSURL
		if t.voice {
			t.endpoint = DefaultTencentVoiceURL
		}
	}
	t.endpoint += "/"
	return t
}

// tencentContentType is the content type every request is signed and sent with.
const tencentContentType = "application/json; charset=utf-8"

// TencentAuthorization is the TC3-HMAC-SHA256 Authorization header of a POST of
// payload to host, for service, at t: the canonical request names content-type and
// host, its URI is always "/".
func TencentAuthorization(secretID, secretKey, service, host string, t time.Time, payload []byte) string {
	sum := func(b []byte) string {
		h := sha256.Sum256(b)
		return hex.EncodeToString(h[:])
	}
	mac := func(key []byte, s string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(s))
		return m.Sum(nil)
	}
	date := t.UTC().Format("2006-01-02")
	canonical := "POST\n/\n\ncontent-type:" + tencentContentType + "\nhost:" + strings.ToLower(host) + "\n\ncontent-type;host\n" + sum(payload)
	scope := date + "/" + service + "/tc3_request"
	toSign := "TC3-HMAC-SHA256\n" + strconv.FormatInt(t.Unix(), 10) + "\n" + scope + "\n" + sum([]byte(canonical))
	key := mac(mac(mac([]byte("TC3"+secretKey), date), service), "tc3_request")
	return "TC3-HMAC-SHA256 Credential=" + secretID + "/" + scope + ", SignedHeaders=content-type;host, Signature=" +
		hex.EncodeToString(mac(key, toSign))
}

// tencentError is the Error of an answer that failed as a whole.
type tencentError struct {
	Code    string `json:"Code"`
	Message string `json:"Message"`
}

// tencentStatus is one number's result of SendSms.
type tencentStatus struct {
	SerialNo    string `json:"SerialNo"`
	PhoneNumber string `json:"PhoneNumber"`
	Code        string `json:"Code"`
	Message     string `json:"Message"`
}

// tencentReply is every answer of the two APIs.
type tencentReply struct {
	Response struct {
		Error         *tencentError   `json:"Error"`
		RequestID     string          `json:"RequestId"`
		SendStatusSet []tencentStatus `json:"SendStatusSet"` // SMS
		SendStatus    *struct {
			CallID         string `json:"CallId"`
			SessionContext string `json:"SessionContext"`
		} `json:"SendStatus"` // VMS
	} `json:"Response"`
}

// do signs and posts one action and reads its answer; an Error comes back classified.
func (t *Tencent) do(ctx context.Context, action, version string, body any) (tencentReply, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return tencentReply{}, Errorf(Permanent, "", "%s: encoding the request: %v", t.prefix, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, strings.NewReader(string(payload)))
	if err != nil {
		return tencentReply{}, Errorf(Permanent, "", "%s: building the request: %v", t.prefix, unwrapURLError(err))
	}
	now := t.now()
	req.Header.Set("Content-Type", tencentContentType)
	req.Header.Set("X-TC-Action", action)
	req.Header.Set("X-TC-Version", version)
	req.Header.Set("X-TC-Region", t.region)
	req.Header.Set("X-TC-Timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("Authorization", TencentAuthorization(t.secretID, t.secret, t.service, req.URL.Host, now, payload))
	r, err := call(t.client, req, t.prefix)
	if err != nil {
		return tencentReply{}, err
	}
	var reply tencentReply
	if json.Unmarshal(r.body, &reply) != nil {
		if e := statusError(t.prefix, r, ""); e != nil {
			return tencentReply{}, e
		}
		return tencentReply{}, Errorf(Transient, r.httpCode(), "%s: unreadable answer: %s", t.prefix, excerpt(r.body))
	}
	if e := reply.Response.Error; e != nil {
		return tencentReply{}, t.refusal(e.Code, e.Message)
	}
	if e := statusError(t.prefix, r, ""); e != nil {
		return tencentReply{}, e
	}
	return reply, nil
}

// refusal is the classified error of a code Tencent answered with.
func (t *Tencent) refusal(code, message string) *Error {
	e := Errorf(tencentCodeClass(code), code, "%s: %s: %s", t.prefix, code, excerpt([]byte(message)))
	if e.Class == RateLimited {
		e.RetryAfter = tencentLimitWait(code)
	}
	return e
}

// tencentCodeClass maps Tencent Cloud's codes to error classes.
func tencentCodeClass(code string) Class {
	switch {
	case strings.HasPrefix(code, "LimitExceeded."), code == "RequestLimitExceeded", strings.HasPrefix(code, "RequestLimitExceeded."):
		return RateLimited
	case strings.HasPrefix(code, "AuthFailure"), strings.HasPrefix(code, "UnauthorizedOperation"):
		return Auth
	case strings.HasPrefix(code, "InternalError"), code == "ResourceUnavailable", strings.HasPrefix(code, "FailedOperation.Timeout"):
		return Transient
	}
	return Permanent
}

// tencentLimitWait is how long a LimitExceeded code asks to wait, by the window it
// names.
func tencentLimitWait(code string) time.Duration {
	switch {
	case strings.Contains(code, "ThirtySecond"):
		return 30 * time.Second
	case strings.Contains(code, "TenMinute"):
		return 10 * time.Minute
	case strings.Contains(code, "OneHour"):
		return time.Hour
	case strings.Contains(code, "Daily"), strings.Contains(code, "Day"):
		return 24 * time.Hour
	}
	return time.Minute
}

// Send implements Sender: an SMS by SendSms, a call by SendTtsVoice whose
// SessionContext is Herald's message id.
func (t *Tencent) Send(ctx context.Context, m Message) (Receipt, error) {
	_, e164, err := templatedTo(t.prefix, m)
	if err != nil {
		return Receipt{}, err
	}
	if t.voice {
		reply, err := t.do(ctx, "SendTtsVoice", "2020-09-02", map[string]any{
			"TemplateId": m.ProviderTemplate, "TemplateParamSet": paramValues(trimSpoken(m.Params, TTSCap(ProviderTencent))),
			"CalledNumber": e164, "VoiceSdkAppid": t.appID, "PlayTimes": 2, "SessionContext": m.ID,
		})
		if err != nil || reply.Response.SendStatus == nil {
			return Receipt{}, orUnreadable(err, t.prefix)
		}
		return Receipt{ProviderMessageID: reply.Response.SendStatus.CallID}, nil
	}
	reply, err := t.do(ctx, "SendSms", "2021-01-11", map[string]any{
		"SmsSdkAppId": t.appID, "SignName": t.signName, "TemplateId": m.ProviderTemplate,
		"TemplateParamSet": paramValues(m.Params), "PhoneNumberSet": []string{e164}, "SessionContext": m.ID,
	})
	if err != nil || len(reply.Response.SendStatusSet) != 1 {
		return Receipt{}, orUnreadable(err, t.prefix)
	}
	st := reply.Response.SendStatusSet[0]
	if !strings.EqualFold(st.Code, "Ok") {
		return Receipt{}, t.refusal(st.Code, st.Message)
	}
	return Receipt{ProviderMessageID: st.SerialNo}, nil
}

// orUnreadable is err, or when there was none, the error of a success answer that
// lacks what a success carries.
func orUnreadable(err error, prefix string) error {
	if err != nil {
		return err
	}
	return Errorf(Transient, "", "%s: the answer carries no result", prefix)
}

// tencentCallback is one of VMS's event callbacks: the call's status, a key pressed,
// or why a call failed.
type tencentCallback struct {
	Prompt  *tencentCallEvent `json:"voiceprompt_callback"`
	Key     *tencentCallEvent `json:"voicekey_callback"`
	Failure *tencentCallEvent `json:"voice_failure_callback"`
}

// tencentCallEvent holds the fields of the three callbacks.
type tencentCallEvent struct {
	CallID        string `json:"callid"`
	Mobile        string `json:"mobile"`
	NationCode    string `json:"nationcode"`
	Result        string `json:"result"` // 0 answered, 1 not answered, 2 failed
	EndCallTime   string `json:"end_calltime"`
	KeyPress      string `json:"keypress"`
	FailureReason string `json:"failure_reason"`
}

// callee is the number called, as Herald stores it.
func (e *tencentCallEvent) callee() string {
	if e.NationCode == "" || e.NationCode == "86" {
		return e.Mobile
	}
	return "+" + e.NationCode + e.Mobile
}

// Reports implements VoiceReporter for VMS's callbacks (voiceprompt_callback,
// voicekey_callback, voice_failure_callback), checked by the callback URL's token.
// Tencent names the call by its CallId alone: the reports' MessageID is empty and
// CallID is the send's provider message id.
func (t *Tencent) Reports(h http.Header, query url.Values, body []byte) ([]VoiceReport, error) {
	if err := checkReportToken(t.token, h, query); err != nil {
		return nil, err
	}
	var cb tencentCallback
	if err := json.Unmarshal(body, &cb); err != nil {
		return nil, Errorf(Permanent, "", "%s: reading the report: %v", t.prefix, err)
	}
	switch {
	case cb.Prompt != nil:
		outcome := map[string]string{"0": VoiceAnswered, "1": VoiceNoAnswer}[cb.Prompt.Result]
		if outcome == "" {
			outcome = VoiceFailed
		}
		at := time.Time{}
		if secs, err := strconv.ParseInt(cb.Prompt.EndCallTime, 10, 64); err == nil {
			at = time.Unix(secs, 0).UTC()
		}
		return []VoiceReport{{CallID: cb.Prompt.CallID, Callee: cb.Prompt.callee(), Outcome: outcome, At: at}}, nil
	case cb.Key != nil:
		return []VoiceReport{{CallID: cb.Key.CallID, Callee: cb.Key.callee(), Outcome: VoiceAnswered, Keys: cb.Key.KeyPress}}, nil
	case cb.Failure != nil:
		outcome := VoiceFailed
		if strings.Contains(cb.Failure.FailureReason, "忙") {
			outcome = VoiceBusy
		}
		return []VoiceReport{{CallID: cb.Failure.CallID, Callee: cb.Failure.callee(), Outcome: outcome}}, nil
	}
	return nil, Errorf(Permanent, "", "%s: the report is none of Tencent's voice callbacks", t.prefix)
}

// Probe asks for an SMS's status by a made-up number (PullSmsSendStatusByPhoneNumber),
// or for a call to "+860", which no network can place and VMS refuses only after it
// checked the keys: calls that check the signature and say which key was refused.
func (t *Tencent) Probe(ctx context.Context) ProbeResult {
	action, version, body := "PullSmsSendStatusByPhoneNumber", "2021-01-11", map[string]any{
		"BeginTime": t.now().Add(-time.Hour).Unix(), "Offset": 0, "Limit": 1, "PhoneNumber": "+8613800000000", "SmsSdkAppId": t.appID}
	if t.voice {
		action, version, body = "SendTtsVoice", "2020-09-02", map[string]any{"TemplateId": "0", "TemplateParamSet": []string{},
			"CalledNumber": "+860", "VoiceSdkAppid": t.appID, "SessionContext": "herald-probe"}
	}
	_, err := t.do(ctx, action, version, body)
	return cloudProbe(t.prefix, "POST "+t.endpoint+" X-TC-Action: "+action, err, "tencent", tencentRefusedKey)
}

// tencentRefusedKey names the setting a refusal is about.
func tencentRefusedKey(code string) string {
	switch {
	case code == "AuthFailure.SecretIdNotFound", code == "AuthFailure.InvalidSecretId":
		return "secret_id"
	case code == "AuthFailure.SignatureFailure":
		return "secret_key"
	case strings.Contains(code, "SdkAppId"), strings.Contains(code, "SdkAppid"):
		return "sdk_app_id"
	case strings.Contains(code, "Signature") && !strings.HasPrefix(code, "AuthFailure"):
		return "sign_name"
	}
	return ""
}
