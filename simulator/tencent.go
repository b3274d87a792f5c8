package simulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// tencentFail is an answer of Tencent Cloud API 3.0 that failed as a whole.
func tencentFail(w http.ResponseWriter, reqID, code, msg string) {
	writeJSON(w, http.StatusOK, map[string]any{"Response": map[string]any{
		"Error": map[string]string{"Code": code, "Message": msg}, "RequestId": reqID}})
}

// tc3Credential is the parts of a TC3-HMAC-SHA256 Authorization header.
type tc3Credential struct {
	secretID, date, service, signedHeaders, signature string
}

// parseTC3 reads "TC3-HMAC-SHA256 Credential=<id>/<date>/<service>/tc3_request,
// SignedHeaders=…, Signature=…".
func parseTC3(h string) (tc3Credential, bool) {
	rest, ok := strings.CutPrefix(h, "TC3-HMAC-SHA256 ")
	if !ok {
		return tc3Credential{}, false
	}
	var c tc3Credential
	for part := range strings.SplitSeq(rest, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch name {
		case "Credential":
			f := strings.Split(value, "/")
			if len(f) != 4 || f[3] != "tc3_request" {
				return tc3Credential{}, false
			}
			c.secretID, c.date, c.service = f[0], f[1], f[2]
		case "SignedHeaders":
			c.signedHeaders = value
		case "Signature":
			c.signature = value
		}
	}
	return c, c.secretID != "" && c.signature != "" && c.signedHeaders != ""
}

// tc3Expected is the signature Tencent Cloud computes for a request.
func tc3Expected(r *http.Request, c tc3Credential, secret, timestamp string, payload []byte) string {
	hexSum := func(b []byte) string {
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	}
	sign := func(key []byte, msg string) []byte {
		m := hmac.New(sha256.New, key)
		io.WriteString(m, msg)
		return m.Sum(nil)
	}
	var headers strings.Builder
	for name := range strings.SplitSeq(c.signedHeaders, ";") {
		value := r.Header.Get(name)
		if name == "host" {
			value = r.Host
		}
		headers.WriteString(name + ":" + strings.ToLower(strings.TrimSpace(value)) + "\n")
	}
	canonical := strings.Join([]string{r.Method, "/", "", headers.String(), c.signedHeaders, hexSum(payload)}, "\n")
	scope := c.date + "/" + c.service + "/tc3_request"
	toSign := "TC3-HMAC-SHA256\n" + timestamp + "\n" + scope + "\n" + hexSum([]byte(canonical))
	key := sign(sign(sign([]byte("TC3"+secret), c.date), c.service), "tc3_request")
	return hex.EncodeToString(sign(key, toSign))
}

// tencentRequest is the body of SendSms and SendTtsVoice.
type tencentRequest struct {
	SmsSdkAppID      string   `json:"SmsSdkAppId"`
	SignName         string   `json:"SignName"`
	TemplateID       string   `json:"TemplateId"`
	TemplateParamSet []string `json:"TemplateParamSet"`
	PhoneNumberSet   []string `json:"PhoneNumberSet"`
	SessionContext   string   `json:"SessionContext"`
	CalledNumber     string   `json:"CalledNumber"`
	VoiceSdkAppid    string   `json:"VoiceSdkAppid"`
}

// handleTencent serves Tencent Cloud SMS's and VMS's API 3.0 under /tencent/: the
// action is the X-TC-Action header (SendSms, SendTtsVoice, and the queries a
// connection test makes).
func (p *phoneState) handleTencent(w http.ResponseWriter, r *http.Request) {
	reqID := p.sim.newMsgID()
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		tencentFail(w, reqID, "InvalidParameter", "unreadable body")
		return
	}
	cred, ok := parseTC3(r.Header.Get("Authorization"))
	timestamp := r.Header.Get("X-TC-Timestamp")
	if !ok || timestamp == "" {
		tencentFail(w, reqID, "AuthFailure.InvalidAuthorization", "Authorization is not a TC3-HMAC-SHA256 header.")
		return
	}
	if ts, err := strconv.ParseInt(timestamp, 10, 64); err != nil || time.Unix(ts, 0).UTC().Format("2006-01-02") != cred.date {
		tencentFail(w, reqID, "AuthFailure.SignatureFailure", "The credential's date is not the timestamp's.")
		return
	}
	key, known := p.key("tencent", cred.secretID)
	if !known {
		tencentFail(w, reqID, "AuthFailure.SecretIdNotFound", "The SecretId is not found.")
		return
	}
	if !hmac.Equal([]byte(cred.signature), []byte(tc3Expected(r, cred, key.Secret, timestamp, payload))) {
		tencentFail(w, reqID, "AuthFailure.SignatureFailure", "The provided credentials could not be validated.")
		return
	}
	var req tencentRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		tencentFail(w, reqID, "InvalidParameter", "the body is not JSON")
		return
	}
	v := p.sim.decide()
	waitLatency(r, v)
	switch v.outcome {
	case outcomeAuth:
		tencentFail(w, reqID, "UnauthorizedOperation.RequestPermissionDeny", "permission denied")
		return
	case outcomeFail:
		tencentFail(w, reqID, "InternalError", "internal error")
		return
	case outcomeTimeout, outcomeAcceptThenTimeout:
		p.sim.holdThenAbort(r)
	case outcomeThrottle:
		tencentFail(w, reqID, "RequestLimitExceeded", "request limit exceeded")
		return
	case outcomeReject:
		tencentFail(w, reqID, "InvalidParameterValue.IncorrectPhoneNumber", "incorrect phone number")
		return
	}
	switch action := r.Header.Get("X-TC-Action"); {
	case action == "SendSms" && cred.service == "sms":
		p.tencentSMS(w, req, reqID)
	case action == "SendTtsVoice" && cred.service == "vms":
		p.tencentCall(w, req, key, reqID)
	case action == "PullSmsSendStatusByPhoneNumber":
		writeJSON(w, http.StatusOK, map[string]any{"Response": map[string]any{"PullSmsSendStatusSet": []any{}, "RequestId": reqID}})
	default:
		tencentFail(w, reqID, "InvalidAction", "action "+action+" is not served by "+cred.service)
	}
}

// tencentLimitCode is Tencent's code for a full per-number window.
func tencentLimitCode(full time.Duration) string {
	switch {
	case full >= 24*time.Hour:
		return "LimitExceeded.PhoneNumberDailyLimit"
	case full >= time.Hour:
		return "LimitExceeded.PhoneNumberOneHourLimit"
	case full >= 10*time.Minute:
		return "LimitExceeded.PhoneNumberTenMinuteLimit"
	}
	return "LimitExceeded.PhoneNumberThirtySecondLimit"
}

// tencentNumber reads +86 and eleven digits as the mainland number.
func tencentNumber(n string) (string, bool) {
	rest, ok := strings.CutPrefix(n, "+86")
	return rest, ok && mainland(rest)
}

// numbered names a template's parameters as Tencent does, {1}, {2}, …
func numbered(values []string) []Param {
	out := make([]Param, len(values))
	for i, v := range values {
		out[i] = Param{Name: strconv.Itoa(i + 1), Value: v}
	}
	return out
}

// tencentSMS plays SendSms; each number's result is in SendStatusSet.
func (p *phoneState) tencentSMS(w http.ResponseWriter, req tencentRequest, reqID string) {
	if req.SmsSdkAppID == "" || req.TemplateID == "" || len(req.PhoneNumberSet) == 0 {
		tencentFail(w, reqID, "MissingParameter", "SmsSdkAppId, TemplateId and PhoneNumberSet are required")
		return
	}
	if req.SignName == "" {
		tencentFail(w, reqID, "FailedOperation.SignatureIncorrectOrUnapproved", "the sign name is empty")
		return
	}
	var set []map[string]any
	for _, n := range req.PhoneNumberSet {
		st := map[string]any{"PhoneNumber": n, "Fee": 1, "SessionContext": req.SessionContext, "IsoCode": "CN"}
		number, ok := tencentNumber(n)
		if !ok {
			st["Code"], st["Message"] = "InvalidParameterValue.IncorrectPhoneNumber", "incorrect phone number"
		} else if admitted, full := p.admit("tencent", "sms", number); !admitted {
			st["Code"], st["Message"] = tencentLimitCode(full), "the number's frequency limit is reached"
		} else {
			id := p.sim.newMsgID()
			st["Code"], st["Message"], st["SerialNo"] = "Ok", "send success", id
			p.sim.record(Delivery{Platform: "sms", Provider: "tencent", To: number, RequestID: req.SessionContext,
				ReceivedAtMs: p.sim.now().UnixMilli(), ProviderMsgID: id, Template: req.TemplateID, Params: numbered(req.TemplateParamSet)})
		}
		set = append(set, st)
	}
	writeJSON(w, http.StatusOK, map[string]any{"Response": map[string]any{"SendStatusSet": set, "RequestId": reqID}})
}

// tencentCall plays SendTtsVoice.
func (p *phoneState) tencentCall(w http.ResponseWriter, req tencentRequest, key PhoneKey, reqID string) {
	number, ok := tencentNumber(req.CalledNumber)
	switch {
	case req.VoiceSdkAppid == "" || req.TemplateID == "":
		tencentFail(w, reqID, "MissingParameter", "VoiceSdkAppid and TemplateId are required")
		return
	case !ok:
		tencentFail(w, reqID, "InvalidParameterValue.IncorrectPhoneNumber", "incorrect phone number")
		return
	}
	if admitted, full := p.admit("tencent", "voice", number); !admitted {
		tencentFail(w, reqID, tencentLimitCode(full), "the number's frequency limit is reached")
		return
	}
	id := p.sim.newMsgID()
	now := p.sim.now()
	p.placeCall(call{Provider: "tencent", ID: id, MessageID: req.SessionContext, To: number, Behaviour: p.callee(number),
		Keypad: true, Key: key, At: now},
		Delivery{Platform: "voice", Provider: "tencent", To: number, RequestID: req.SessionContext, ReceivedAtMs: now.UnixMilli(),
			ProviderMsgID: id, Template: req.TemplateID, Params: numbered(req.TemplateParamSet)}, tencentReports)
	writeJSON(w, http.StatusOK, map[string]any{"Response": map[string]any{
		"SendStatus": map[string]string{"CallId": id, "SessionContext": req.SessionContext}, "RequestId": reqID}})
}

// tencentReports are a call's callbacks as VMS posts them: the key pressed
// (voicekey_callback) before the call's status (voiceprompt_callback), or why it
// failed (voice_failure_callback).
func tencentReports(c call) [][]byte {
	outcome, keys := c.outcome()
	at := strconv.FormatInt(c.At.Unix(), 10)
	var out [][]byte
	add := func(v any) {
		b, _ := json.Marshal(v)
		out = append(out, b)
	}
	if outcome == "busy" {
		add(map[string]any{"voice_failure_callback": map[string]any{"call_from": "", "callid": c.ID, "failure_code": 4,
			"failure_reason": "用户忙", "mobile": c.To, "nationcode": "86"}})
		return out
	}
	if keys != "" {
		add(map[string]any{"voicekey_callback": map[string]string{"call_from": "", "callid": c.ID, "keypress": keys,
			"mobile": c.To, "nationcode": "86"}})
	}
	result := "0"
	if outcome == "no_answer" {
		result = "1"
	}
	add(map[string]any{"voiceprompt_callback": map[string]string{"result": result, "accept_time": at, "call_from": "",
		"callid": c.ID, "end_calltime": at, "fee": "1", "mobile": c.To, "nationcode": "86", "start_calltime": at}})
	return out
}
