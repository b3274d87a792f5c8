package channels

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Aliyun sends SMS through Alibaba Cloud's Dysmsapi (SendSms) and places calls through
// Dyvmsapi (SingleCallByTts, or IvrCall when the callee is to press 1), with requests
// signed the RPC way (HMAC-SHA1, SignatureVersion 1.0). It is safe for concurrent use.
type Aliyun struct {
	voice      bool
	keyID      string
	secret     string
	signName   string
	showNumber string
	endpoint   string
	token      string // the callback token, voice only
	client     *http.Client
	now        func() time.Time
	prefix     string
}

// newAliyun is the aliyun provider's adapter for a validated sms or voice config.
func newAliyun(platform string, cfg map[string]string, allowPrivate bool) *Aliyun {
	a := &Aliyun{voice: platform == "voice", keyID: strings.TrimSpace(cfg["access_key_id"]), secret: cfg["access_key_secret"],
		signName: cfg["sign_name"], showNumber: cfg["called_show_number"], token: cfg["callback_token"],
		client: NewHTTPClient(allowPrivate, backstopTimeout), now: time.Now, prefix: "channels: " + platform + " aliyun"}
	a.endpoint = strings.TrimRight(strings.TrimSpace(cfg["base_url"]), "/")
	if a.endpoint == "" {
		a.endpoint = DefaultAliyunSMSURL
		if a.voice {
			a.endpoint = DefaultAliyunVoiceURL
		}
	}
	a.endpoint += "/"
	return a
}

// aliyunVersion is the API version of both Dysmsapi and Dyvmsapi.
const aliyunVersion = "2017-05-25"

// aliyunEncode is the percent-encoding of Alibaba Cloud's RPC signature: RFC 3986
// unreserved characters stay, everything else is %XX, a space %20.
func aliyunEncode(s string) string {
	e := url.QueryEscape(s)
	return strings.NewReplacer("+", "%20", "*", "%2A", "%7E", "~").Replace(e)
}

// AliyunSignature is the RPC signature of a request's parameters (Signature itself
// left out) sent with method, under the AccessKey secret.
func AliyunSignature(method string, params url.Values, secret string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		if k != "Signature" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = aliyunEncode(k) + "=" + aliyunEncode(params.Get(k))
	}
	toSign := method + "&" + aliyunEncode("/") + "&" + aliyunEncode(strings.Join(pairs, "&"))
	mac := hmac.New(sha1.New, []byte(secret+"&"))
	mac.Write([]byte(toSign))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// aliyunReply is every answer of the two APIs.
type aliyunReply struct {
	Code      string `json:"Code"`
	Message   string `json:"Message"`
	RequestID string `json:"RequestId"`
	BizID     string `json:"BizId"`  // SendSms
	CallID    string `json:"CallId"` // SingleCallByTts, IvrCall
}

// do signs and posts one action and reads its answer; a Code other than OK comes back
// classified.
func (a *Aliyun) do(ctx context.Context, action string, params url.Values) (aliyunReply, error) {
	nonce := make([]byte, 16)
	rand.Read(nonce)
	params.Set("Action", action)
	params.Set("AccessKeyId", a.keyID)
	params.Set("Format", "JSON")
	params.Set("RegionId", "cn-hangzhou")
	params.Set("SignatureMethod", "HMAC-SHA1")
	params.Set("SignatureVersion", "1.0")
	params.Set("SignatureNonce", hex.EncodeToString(nonce))
	params.Set("Timestamp", a.now().UTC().Format("2006-01-02T15:04:05Z"))
	params.Set("Version", aliyunVersion)
	params.Set("Signature", AliyunSignature(http.MethodPost, params, a.secret))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.endpoint, strings.NewReader(params.Encode()))
	if err != nil {
		return aliyunReply{}, Errorf(Permanent, "", "%s: building the request: %v", a.prefix, unwrapURLError(err))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r, err := call(a.client, req, a.prefix)
	if err != nil {
		return aliyunReply{}, err
	}
	var reply aliyunReply
	if json.Unmarshal(r.body, &reply) != nil || reply.Code == "" {
		if e := statusError(a.prefix, r, ""); e != nil {
			return aliyunReply{}, e
		}
		return aliyunReply{}, Errorf(Transient, r.httpCode(), "%s: unreadable answer: %s", a.prefix, excerpt(r.body))
	}
	if reply.Code == "OK" {
		return reply, nil
	}
	e := Errorf(aliyunCodeClass(reply.Code), reply.Code, "%s: %s: %s", a.prefix, reply.Code, excerpt([]byte(reply.Message)))
	if e.Class == RateLimited {
		e.RetryAfter = aliyunLimitWait(reply.Code, reply.Message)
	}
	return aliyunReply{}, e
}

// aliyunCodeClass maps Alibaba Cloud's codes to error classes: flow control is a rate
// limit, a key the service does not know or a signature it cannot match is auth, a
// number, template or sign name it refuses is permanent, and its own failures are
// transient.
func aliyunCodeClass(code string) Class {
	switch {
	case code == "isv.BUSINESS_LIMIT_CONTROL", code == "isv.DAY_LIMIT_CONTROL", strings.HasPrefix(code, "Throttling"):
		return RateLimited
	case strings.HasPrefix(code, "InvalidAccessKeyId"), code == "SignatureDoesNotMatch", code == "IncompleteSignature",
		code == "isp.RAM_PERMISSION_DENY", code == "Forbidden.RAM", code == "InvalidTimeStamp.Expired", code == "SignatureNonceUsed":
		return Auth
	case strings.HasPrefix(code, "isp.") && code != "isp.RAM_PERMISSION_DENY", code == "ServiceUnavailable", code == "InternalError":
		return Transient
	}
	return Permanent
}

// aliyunLimitWait is how long a flow-control refusal asks to wait: its message names
// the window that is full (分钟级, 小时级, 天级).
func aliyunLimitWait(code, message string) time.Duration {
	switch {
	case code == "isv.DAY_LIMIT_CONTROL", strings.Contains(message, "天级"), strings.Contains(message, "day"):
		return 24 * time.Hour
	case strings.Contains(message, "小时级"), strings.Contains(message, "hour"):
		return time.Hour
	}
	return time.Minute
}

// Send implements Sender: an SMS by SendSms, a call by SingleCallByTts, or by IvrCall
// for an alert's notice, whose callee presses 1 to acknowledge it. OutId carries
// Herald's message id to the provider's reports.
func (a *Aliyun) Send(ctx context.Context, m Message) (Receipt, error) {
	national, _, err := templatedTo(a.prefix, m)
	if err != nil {
		return Receipt{}, err
	}
	params := url.Values{"OutId": {m.ID}}
	if !a.voice {
		params.Set("PhoneNumbers", national)
		params.Set("SignName", a.signName)
		params.Set("TemplateCode", m.ProviderTemplate)
		params.Set("TemplateParam", paramsObject(m.Params))
		reply, err := a.do(ctx, "SendSms", params)
		return Receipt{ProviderMessageID: reply.BizID}, err
	}
	spoken := paramsObject(trimSpoken(m.Params, TTSCap(ProviderAliyun)))
	params.Set("CalledNumber", national)
	if a.showNumber != "" {
		params.Set("CalledShowNumber", a.showNumber)
	}
	action := "SingleCallByTts"
	if wantsKeypad(m) {
		action = "IvrCall"
		params.Set("StartCode", m.ProviderTemplate)
		params.Set("StartTtsParams", spoken)
		params.Set("MenuKeyMap", `[{"Key":"1","Code":`+jsonString(m.ProviderTemplate)+`,"TtsParams":`+jsonString(spoken)+`}]`)
		params.Set("PlayTimes", "2")
		params.Set("Timeout", "10000")
	} else {
		params.Set("TtsCode", m.ProviderTemplate)
		params.Set("TtsParam", spoken)
		params.Set("PlayTimes", "2")
	}
	reply, err := a.do(ctx, action, params)
	return Receipt{ProviderMessageID: reply.CallID}, err
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// aliyunReport is one item of Dyvmsapi's call reports, pushed as a JSON array: the
// call record (VoiceReport) and the IVR's intermediate reports (VoiceCallReport),
// whose dtmf holds the keys pressed.
type aliyunReport struct {
	CallID     string `json:"call_id"`
	OutID      string `json:"out_id"`
	Callee     string `json:"callee"`
	StatusCode string `json:"status_code"`
	DTMF       string `json:"dtmf"`
	EndTime    string `json:"end_time"`
	StatusTime string `json:"status_time"`
}

// aliyunOutcome reads a call status code (呼叫状态码): 200000 heard it all, 200001 hung
// up early and 300000 an IVR key report are answered; 200002 is busy; 200003 rang
// unanswered, 200005 and 200007 could not be reached; the rest failed.
func aliyunOutcome(code string) string {
	switch code {
	case "200000", "200001", "200008", "300000":
		return VoiceAnswered
	case "200002":
		return VoiceBusy
	case "200003", "200005", "200007":
		return VoiceNoAnswer
	}
	return VoiceFailed
}

// aliyunTime is how Alibaba Cloud writes a report's times: Beijing time.
var aliyunTime = time.FixedZone("CST", 8*3600)

// Reports implements VoiceReporter for Dyvmsapi's HTTP push of call reports, checked
// by the callback URL's token.
func (a *Aliyun) Reports(h http.Header, query url.Values, body []byte) ([]VoiceReport, error) {
	if err := checkReportToken(a.token, h, query); err != nil {
		return nil, err
	}
	var items []aliyunReport
	if err := decodeOneOrMany(body, &items); err != nil {
		return nil, Errorf(Permanent, "", "%s: reading the report: %v", a.prefix, err)
	}
	out := make([]VoiceReport, 0, len(items))
	for _, it := range items {
		at := it.EndTime
		if at == "" {
			at = it.StatusTime
		}
		when, _ := time.ParseInLocation("2006-01-02 15:04:05", at, aliyunTime)
		out = append(out, VoiceReport{MessageID: it.OutID, CallID: it.CallID, Callee: it.Callee,
			Outcome: aliyunOutcome(it.StatusCode), Keys: it.DTMF, At: when.UTC()})
	}
	return out, nil
}

// Probe asks for a call's details by a made-up id (QueryCallDetailByCallId) or an
// SMS's send details (QuerySendDetails): harmless calls that check the AccessKey and
// its signature, and say which key the provider refused.
func (a *Aliyun) Probe(ctx context.Context) ProbeResult {
	action, params := "QuerySendDetails", url.Values{"PhoneNumber": {"13800000000"}, "SendDate": {a.now().Format("20060102")}, "PageSize": {"1"}, "CurrentPage": {"1"}}
	if a.voice {
		action, params = "QueryCallDetailByCallId", url.Values{"CallId": {"0^0"}, "ProdId": {"11000000300006"}, "QueryDate": {"0"}}
	}
	_, err := a.do(ctx, action, params)
	return cloudProbe(a.prefix, "POST "+a.endpoint+" Action="+action, err, "aliyun", aliyunRefusedKey)
}

// aliyunRefusedKey names the setting a refusal is about.
func aliyunRefusedKey(code string) string {
	switch {
	case strings.HasPrefix(code, "InvalidAccessKeyId"):
		return "access_key_id"
	case code == "SignatureDoesNotMatch", code == "IncompleteSignature":
		return "access_key_secret"
	case strings.Contains(code, "SIGN"):
		return "sign_name"
	}
	return ""
}

// cloudProbe is the connection test of a cloud provider's harmless call: passed when
// the provider checked the keys and said no more than that the made-up query found
// nothing, else which key it refused.
func cloudProbe(prefix, request string, err error, provider string, refusedKey func(code string) string) ProbeResult {
	ce := Classify(err)
	step := exchange(verbatim(request), verbatim("OK"))
	if err != nil {
		step = exchange(verbatim(request), verbatim(ce.Error()))
	}
	switch {
	case err == nil, ce.Class == Permanent && refusedKey(ce.Code) == "", ce.Class == RateLimited:
		return ProbeResult{OK: true, Summary: note("phone.probe.accepted", "Provider", provider), Steps: []ProbeStep{step}}
	case ce.Code == "" || ce.Class == Transient:
		return ProbeResult{Summary: note("phone.probe.unreachable", "Provider", provider, "Problem", noAnswer(err)), Steps: []ProbeStep{step}}
	}
	key := refusedKey(ce.Code)
	if key == "" {
		return ProbeResult{Summary: note("phone.probe.refused", "Provider", provider, "Code", ce.Code), Steps: []ProbeStep{step}}
	}
	return ProbeResult{Summary: note("phone.probe.refused_key", "Provider", provider, "Code", ce.Code, "Field", "config."+key), Steps: []ProbeStep{step}}
}
