package simulator

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// aliyunAnswer is every answer of Dysmsapi and Dyvmsapi.
type aliyunAnswer struct {
	Code      string `json:"Code"`
	Message   string `json:"Message"`
	RequestID string `json:"RequestId"`
	BizID     string `json:"BizId,omitempty"`
	CallID    string `json:"CallId,omitempty"`
}

// rfc3986 is Alibaba's percent-encoding: every byte but the unreserved ones as %XX.
func rfc3986(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// aliyunExpected is the signature Alibaba Cloud computes for a request's parameters.
func aliyunExpected(method string, form url.Values, secret string) string {
	names := make([]string, 0, len(form))
	for k := range form {
		if k != "Signature" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var query strings.Builder
	for i, k := range names {
		if i > 0 {
			query.WriteByte('&')
		}
		query.WriteString(rfc3986(k) + "=" + rfc3986(form.Get(k)))
	}
	mac := hmac.New(sha1.New, []byte(secret+"&"))
	mac.Write([]byte(method + "&%2F&" + rfc3986(query.String())))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// handleAliyun serves Dysmsapi and Dyvmsapi's RPC calls under /aliyun/: SendSms,
// SingleCallByTts, IvrCall, and the queries a connection test makes.
func (p *phoneState) handleAliyun(w http.ResponseWriter, r *http.Request) {
	reqID := p.sim.newMsgID()
	answer := func(status int, code, msg string) {
		writeJSON(w, status, aliyunAnswer{Code: code, Message: msg, RequestID: reqID})
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseForm(); err != nil {
		answer(http.StatusBadRequest, "InvalidParameter", "unreadable form")
		return
	}
	form := r.Form
	for _, name := range []string{"AccessKeyId", "Action", "Signature", "SignatureNonce", "Timestamp", "Version"} {
		if form.Get(name) == "" {
			answer(http.StatusBadRequest, "MissingParameter", name+" is mandatory for this action.")
			return
		}
	}
	if form.Get("SignatureMethod") != "HMAC-SHA1" || form.Get("SignatureVersion") != "1.0" {
		answer(http.StatusBadRequest, "InvalidParameter", "SignatureMethod HMAC-SHA1 and SignatureVersion 1.0 are required.")
		return
	}
	if _, err := time.Parse("2006-01-02T15:04:05Z", form.Get("Timestamp")); err != nil {
		answer(http.StatusBadRequest, "InvalidTimeStamp.Format", "Specified time stamp or date value is not well formatted.")
		return
	}
	key, known := p.key("aliyun", form.Get("AccessKeyId"))
	if !known {
		answer(http.StatusNotFound, "InvalidAccessKeyId.NotFound", "Specified access key is not found.")
		return
	}
	if !hmac.Equal([]byte(form.Get("Signature")), []byte(aliyunExpected(r.Method, form, key.Secret))) {
		answer(http.StatusBadRequest, "SignatureDoesNotMatch", "Specified signature is not matched with our calculation.")
		return
	}
	v := p.sim.decide()
	waitLatency(r, v)
	switch v.outcome {
	case outcomeAuth:
		answer(http.StatusForbidden, "isp.RAM_PERMISSION_DENY", "RAM permission denied")
		return
	case outcomeFail:
		answer(http.StatusInternalServerError, "isp.SYSTEM_ERROR", "system error")
		return
	case outcomeTimeout, outcomeAcceptThenTimeout:
		p.sim.holdThenAbort(r)
	case outcomeThrottle:
		answer(http.StatusOK, "Throttling.User", "Request was denied due to user flow control.")
		return
	case outcomeReject:
		answer(http.StatusOK, "isv.MOBILE_NUMBER_ILLEGAL", "invalid mobile number")
		return
	}
	switch action := form.Get("Action"); action {
	case "SendSms":
		p.aliyunSMS(w, form, answer, reqID)
	case "SingleCallByTts", "IvrCall":
		p.aliyunCall(w, action, form, key, answer, reqID)
	case "QuerySendDetails", "QueryCallDetailByCallId":
		answer(http.StatusOK, "OK", "OK")
	default:
		answer(http.StatusBadRequest, "InvalidAction.NotFound", "Specified api is not found, please check your url and method.")
	}
}

// aliyunLimitMessage is how Alibaba words a flow-control refusal, by the window full.
func aliyunLimitMessage(full time.Duration, permits int) string {
	switch {
	case full >= 24*time.Hour:
		return fmt.Sprintf("触发天级流控Permits:%d", permits)
	case full >= time.Hour:
		return fmt.Sprintf("触发小时级流控Permits:%d", permits)
	}
	return fmt.Sprintf("触发分钟级流控Permits:%d", permits)
}

// aliyunSMS plays SendSms.
func (p *phoneState) aliyunSMS(w http.ResponseWriter, form url.Values, answer func(int, string, string), reqID string) {
	to := form.Get("PhoneNumbers")
	if !mainland(to) {
		answer(http.StatusOK, "isv.MOBILE_NUMBER_ILLEGAL", "invalid mobile number")
		return
	}
	if form.Get("SignName") == "" {
		answer(http.StatusOK, "isv.SMS_SIGNATURE_ILLEGAL", "the sign name is empty")
		return
	}
	params, err := orderedParams(form.Get("TemplateParam"))
	if form.Get("TemplateCode") == "" || (form.Get("TemplateParam") != "" && err != nil) {
		answer(http.StatusOK, "isv.SMS_TEMPLATE_ILLEGAL", "template code or parameters invalid")
		return
	}
	if ok, full := p.admit("aliyun", "sms", to); !ok {
		answer(http.StatusOK, "isv.BUSINESS_LIMIT_CONTROL", aliyunLimitMessage(full, 1))
		return
	}
	id := p.sim.newMsgID()
	p.sim.record(Delivery{Platform: "sms", Provider: "aliyun", To: to, RequestID: form.Get("OutId"), ReceivedAtMs: p.sim.now().UnixMilli(),
		ProviderMsgID: id, Template: form.Get("TemplateCode"), Params: params})
	writeJSON(w, http.StatusOK, aliyunAnswer{Code: "OK", Message: "OK", RequestID: reqID, BizID: id})
}

// aliyunCall plays SingleCallByTts and IvrCall.
func (p *phoneState) aliyunCall(w http.ResponseWriter, action string, form url.Values, key PhoneKey, answer func(int, string, string), reqID string) {
	to := form.Get("CalledNumber")
	code, rawParams := form.Get("TtsCode"), form.Get("TtsParam")
	if action == "IvrCall" {
		code, rawParams = form.Get("StartCode"), form.Get("StartTtsParams")
	}
	if !mainland(to) {
		answer(http.StatusOK, "isv.MOBILE_NUMBER_ILLEGAL", "invalid mobile number")
		return
	}
	params, err := orderedParams(rawParams)
	if code == "" || (rawParams != "" && err != nil) {
		answer(http.StatusOK, "isv.TTS_TEMPLATE_ILLEGAL", "TTS template code or parameters invalid")
		return
	}
	if ok, full := p.admit("aliyun", "voice", to+"/"+code); !ok {
		answer(http.StatusOK, "isv.BUSINESS_LIMIT_CONTROL", aliyunLimitMessage(full, 1))
		return
	}
	id := p.sim.newMsgID()
	now := p.sim.now()
	p.placeCall(call{Provider: "aliyun", ID: id, MessageID: form.Get("OutId"), To: to, Behaviour: p.callee(to),
		Keypad: action == "IvrCall", Key: key, At: now},
		Delivery{Platform: "voice", Provider: "aliyun", To: to, RequestID: form.Get("OutId"), ReceivedAtMs: now.UnixMilli(),
			ProviderMsgID: id, Template: code, Params: params}, aliyunReports)
	writeJSON(w, http.StatusOK, aliyunAnswer{Code: "OK", Message: "OK", RequestID: reqID, CallID: id})
}

// aliyunReports is a call's record as Dyvmsapi pushes it (VoiceReport, a JSON array).
func aliyunReports(c call) [][]byte {
	outcome, keys := c.outcome()
	status, msg := "200000", "用户听完语音"
	switch outcome {
	case "no_answer":
		status, msg = "200003", "用户收到呼叫但未接听"
	case "busy":
		status, msg = "200002", "用户占线"
	}
	beijing := time.FixedZone("CST", 8*3600)
	end := c.At.In(beijing).Format("2006-01-02 15:04:05")
	b, _ := json.Marshal([]map[string]string{{"call_id": c.ID, "out_id": c.MessageID, "callee": c.To, "caller": "05710000000",
		"status_code": status, "status_msg": msg, "dtmf": keys, "start_time": end, "end_time": end}})
	return [][]byte{b}
}

// mainland says a number is what Alibaba takes for a mainland mobile: eleven digits.
func mainland(n string) bool {
	if len(n) != 11 || n[0] != '1' {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
