package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// The simulator plays two SMS and voice providers (Alibaba Cloud under /aliyun,
// Tencent Cloud under /tencent) and a bank's own gateway (/phone-gateway): it checks
// each request's signature with the keys it knows, keeps each provider's per-number
// limits the way the provider refuses past them, records each SMS and call, and plays
// the person called: who answers and presses 1, who answers and presses nothing, who
// does not answer, who is busy. After a call it reports the outcome to the callback URL
// set for the key, in the provider's own format.

// The callees' behaviours, set per number by POST /_sim/phone/callees.
const (
	CalleePress1   = "press_1"   // answers, listens, presses 1
	CalleeAnswer   = "answer"    // answers and presses nothing (the default)
	CalleeNoAnswer = "no_answer" // lets it ring out
	CalleeBusy     = "busy"      // is on another call
)

// DefaultAliyunKey and DefaultTencentKey are the keys the simulator knows from the
// start, so an account can be pointed at it without a control call; secrets are
// the key id with "-secret" after it.
const (
	DefaultAliyunKey  = "LTAIsimulator"
	DefaultTencentKey = "AKIDsimulator"
)

// PhoneKey is a provider key the simulator accepts, and where the reports of the
// calls placed with it go.
type PhoneKey struct {
	Provider string `json:"provider"` // aliyun, tencent or http
	KeyID    string `json:"key_id"`   // the AccessKeyId or SecretId; "" for http
	Secret   string `json:"secret"`
	// CallbackURL receives the reports of calls placed with the key, as the provider's
	// console is told (Herald's /callbacks/voice/<account>?token=…); "" sends none.
	CallbackURL string `json:"callback_url"`
}

// phoneState is the simulated providers' state: keys, callees, limits.
type phoneState struct {
	sim    *Simulator
	limits map[string]*windowCounter // by provider/platform

	mu      sync.Mutex
	keys    map[string]PhoneKey // by provider/key id
	callees map[string]string   // by number
	delay   time.Duration       // before a call's report goes out
	reports sync.WaitGroup
}

// defaultReportDelay is how long after a call its report goes out, unless set.
const defaultReportDelay = 20 * time.Millisecond

// phoneLimits are each provider's per-number limits, by provider/platform, as they
// document them.
func phoneLimits(on bool) map[string]*windowCounter {
	if !on {
		none := newWindowCounter()
		return map[string]*windowCounter{"aliyun/sms": none, "aliyun/voice": none, "tencent/sms": none, "tencent/voice": none}
	}
	return map[string]*windowCounter{
		"aliyun/sms":    newWindowCounter(window{1, time.Minute}, window{5, time.Hour}, window{10, 24 * time.Hour}),
		"aliyun/voice":  newWindowCounter(window{1, time.Minute}, window{5, time.Hour}, window{20, 24 * time.Hour}),
		"tencent/sms":   newWindowCounter(window{1, 30 * time.Second}, window{10, 24 * time.Hour}),
		"tencent/voice": newWindowCounter(window{1, 30 * time.Second}, window{2, 10 * time.Minute}),
	}
}

func newPhoneState(sim *Simulator, limits bool) *phoneState {
	p := &phoneState{sim: sim, limits: phoneLimits(limits), callees: map[string]string{}, delay: defaultReportDelay,
		keys: map[string]PhoneKey{}}
	p.setKey(PhoneKey{Provider: "aliyun", KeyID: DefaultAliyunKey, Secret: DefaultAliyunKey + "-secret"})
	p.setKey(PhoneKey{Provider: "tencent", KeyID: DefaultTencentKey, Secret: DefaultTencentKey + "-secret"})
	p.setKey(PhoneKey{Provider: "http"})
	return p
}

func (p *phoneState) setKey(k PhoneKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys[k.Provider+"/"+k.KeyID] = k
}

// key finds a known key.
func (p *phoneState) key(provider, id string) (PhoneKey, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k, ok := p.keys[provider+"/"+id]
	return k, ok
}

// callee is how the person at a number behaves.
func (p *phoneState) callee(number string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b := p.callees[number]; b != "" {
		return b
	}
	return CalleeAnswer
}

// admit applies a provider's per-number limit to one SMS or call; key is what the
// provider counts (the number, with the template for Alibaba's calls). It returns the
// window that is full when refused.
func (p *phoneState) admit(provider, platform, key string) (ok bool, full time.Duration) {
	ok, _, full = p.limits[provider+"/"+platform].admitWindow(key, p.sim.now())
	return ok, full
}

// call is one call placed, as the callee played it.
type call struct {
	Provider, ID, MessageID, To string
	Behaviour                   string
	Keypad                      bool // the call asked for a key
	Key                         PhoneKey
	At                          time.Time
}

// outcome and keys are what became of the call.
func (c call) outcome() (outcome, keys string) {
	switch c.Behaviour {
	case CalleeNoAnswer:
		return "no_answer", ""
	case CalleeBusy:
		return "busy", ""
	case CalleePress1:
		if c.Keypad {
			return "answered", "1"
		}
	}
	return "answered", ""
}

// placeCall records a call and, after the report delay, posts its report(s) to the
// key's callback URL in the provider's format.
func (p *phoneState) placeCall(c call, d Delivery, bodies func(call) [][]byte) {
	d.Outcome, d.Keys = c.outcome()
	p.sim.record(d)
	if c.Key.CallbackURL == "" {
		return
	}
	p.mu.Lock()
	delay := p.delay
	p.mu.Unlock()
	p.reports.Add(1)
	time.AfterFunc(delay, func() {
		defer p.reports.Done()
		for _, body := range bodies(c) {
			postReport(c.Key.CallbackURL, body)
		}
	})
}

// postReport posts one report; the provider retries a failed push, the simulator
// does not.
func postReport(target string, body []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	if resp, err := callbackClient.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// WaitReports waits until every call report scheduled so far has been posted.
func (s *Simulator) WaitReports() { s.phone.reports.Wait() }

// phoneControl is the body of POST /_sim/phone: keys to accept (with their callback
// URLs), callees' behaviours by number, and the delay before a call's report.
type phoneControl struct {
	Keys         []PhoneKey        `json:"keys"`
	Callees      map[string]string `json:"callees"`
	ReportDelay  *Duration         `json:"report_delay"`
	ResetCallees bool              `json:"reset_callees"`
}

// handleControl serves POST /_sim/phone.
func (p *phoneState) handleControl(w http.ResponseWriter, r *http.Request) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	var in phoneControl
	err := dec.Decode(&in)
	for _, k := range in.Keys {
		cloud := k.Provider == "aliyun" || k.Provider == "tencent"
		switch {
		case err != nil:
		case !cloud && k.Provider != "http":
			err = errors.New("a key's provider is aliyun, tencent or http")
		case cloud && (k.KeyID == "" || k.Secret == ""):
			err = errors.New("an aliyun or tencent key needs a key_id and a secret")
		case !cloud && (k.KeyID != "" || k.Secret != ""):
			err = errors.New("the http gateway has no key_id or secret, only a callback_url")
		}
		if _, perr := url.ParseRequestURI(k.CallbackURL); err == nil && k.CallbackURL != "" && perr != nil {
			err = errors.New("callback_url is not a URL")
		}
	}
	for n, b := range in.Callees {
		if err == nil && b != CalleePress1 && b != CalleeAnswer && b != CalleeNoAnswer && b != CalleeBusy {
			err = errors.New("callee " + n + ": want press_1, answer, no_answer or busy")
		}
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, controlError{Error: "invalid phone settings: " + err.Error()})
		return
	}
	for _, k := range in.Keys {
		p.setKey(k)
	}
	p.mu.Lock()
	if in.ResetCallees {
		p.callees = map[string]string{}
	}
	for n, b := range in.Callees {
		p.callees[strings.TrimPrefix(n, "+86")] = b
	}
	if in.ReportDelay != nil {
		p.delay = time.Duration(*in.ReportDelay)
	}
	p.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// gatewayRequest is what the simulated in-house gateway reads of a request: the
// fields of Herald's default body.
type gatewayRequest struct {
	To        string            `json:"to"`
	Content   string            `json:"content"`
	RequestID string            `json:"request_id"`
	Template  string            `json:"template"`
	Params    map[string]string `json:"params"`
}

// handleGateway serves the in-house gateway: POST /phone-gateway/sms and
// /phone-gateway/call, answered {"code":0,"id":…}; a call's report goes out in
// Herald's own format.
func (p *phoneState) handleGateway(platform string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req gatewayRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&req); err != nil || req.To == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"code": 400, "message": "to is required"})
			return
		}
		v := p.sim.decide()
		waitLatency(r, v)
		switch v.outcome {
		case outcomeAuth:
			writeJSON(w, http.StatusUnauthorized, map[string]any{"code": 401, "message": "unauthorized"})
			return
		case outcomeFail, outcomeTimeout, outcomeAcceptThenTimeout:
			writeJSON(w, http.StatusInternalServerError, map[string]any{"code": 500, "message": "internal error"})
			return
		case outcomeThrottle:
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusTooManyRequests, map[string]any{"code": 429, "message": "too many requests"})
			return
		case outcomeReject:
			writeJSON(w, http.StatusOK, map[string]any{"code": 40002, "message": "invalid number"})
			return
		}
		id := p.sim.newMsgID()
		d := Delivery{Platform: platform, Provider: "http", To: req.To, RequestID: req.RequestID, Content: req.Content,
			ReceivedAtMs: p.sim.now().UnixMilli(), ProviderMsgID: id, Template: req.Template, Params: sortedParams(req.Params)}
		if platform == "sms" {
			p.sim.record(d)
		} else {
			key, _ := p.key("http", "")
			p.placeCall(call{Provider: "http", ID: id, MessageID: req.RequestID, To: req.To, Behaviour: p.callee(req.To),
				Keypad: true, Key: key, At: p.sim.now()}, d, gatewayReport)
		}
		writeJSON(w, http.StatusOK, map[string]any{"code": 0, "message": "ok", "id": id})
	}
}

// gatewayReport is a call's report in Herald's own format.
func gatewayReport(c call) [][]byte {
	outcome, keys := c.outcome()
	b, _ := json.Marshal(map[string]any{"message_id": c.MessageID, "call_id": c.ID, "callee": c.To, "outcome": outcome,
		"keys": keys, "at": c.At.UTC().Format(time.RFC3339)})
	return [][]byte{b}
}

// sortedParams lists named parameters by name, for a request that sent a map.
func sortedParams(m map[string]string) []Param {
	var out []Param
	for k, v := range m {
		out = append(out, Param{Name: k, Value: v})
	}
	slices.SortFunc(out, func(a, b Param) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// orderedParams reads a JSON object's members in the order they were written.
func orderedParams(raw string) ([]Param, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out []Param
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v string
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, Param{Name: t.(string), Value: v})
	}
	return out, nil
}
