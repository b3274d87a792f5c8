package channels

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"
)

// SMS and voice calls go through a provider: Alibaba Cloud (Dysmsapi, Dyvmsapi),
// Tencent Cloud (SMS, VMS), or a bank's own gateway or IVR over HTTP. One account names
// its provider and that provider's keys; the table's check refuses the keys of another.

// The providers of the sms and voice platforms.
const (
	ProviderAliyun  = "aliyun"
	ProviderTencent = "tencent"
	ProviderHTTP    = "http"
)

// Providers are the providers an sms or voice account may name, in form order.
var Providers = []string{ProviderAliyun, ProviderTencent, ProviderHTTP}

// The real endpoints, used when an account leaves base_url empty.
const (
	DefaultAliyunSMSURL    = "https://dysmsapi.aliyuncs.com"
	DefaultAliyunVoiceURL  = "https://dyvmsapi.aliyuncs.com"
	DefaultTencentSMSURL   = "https://sms.tencentcloudapi.com"
	DefaultTencentVoiceURL = "https://vms.tencentcloudapi.com"
)

// defaultTencentRegion is where Tencent's SMS and VMS APIs are called when an account
// names no region.
const defaultTencentRegion = "ap-guangzhou"

// phoneFields are the settings of an sms (voice false) or voice account, for every
// provider: check says which belong to which.
func phoneFields(voice bool) []Field {
	fs := []Field{
		{Key: "provider", Required: true, Destination: true, Options: Providers, Label: "phone.field.provider", Help: "phone.help.provider"},
		{Key: "access_key_id", Label: "phone.field.access_key_id", Help: "phone.help.access_key_id"},
		{Key: "access_key_secret", Secret: true, Label: "phone.field.access_key_secret"},
		{Key: "secret_id", Label: "phone.field.secret_id", Help: "phone.help.secret_id"},
		{Key: "secret_key", Secret: true, Label: "phone.field.secret_key"},
		{Key: "sdk_app_id", Label: "phone.field.sdk_app_id", Help: "phone.help.sdk_app_id"},
		{Key: "region", Label: "phone.field.region", Help: "phone.help.region"},
	}
	if voice {
		fs = append(fs, Field{Key: "called_show_number", Label: "phone.field.called_show_number", Help: "phone.help.called_show_number"})
	} else {
		fs = append(fs, Field{Key: "sign_name", Label: "phone.field.sign_name", Help: "phone.help.sign_name"})
	}
	fs = append(fs,
		Field{Key: "base_url", Destination: true, Label: "channels.field.base_url", Help: "phone.help.base_url"},
		Field{Key: "url", Destination: true, Label: "channels.field.url", Help: "phone.help.url"},
		Field{Key: "method", Default: http.MethodPost, Options: []string{http.MethodPost, http.MethodPut, http.MethodGet}, Label: "phone.field.method"},
		Field{Key: "headers", Secret: true, Multiline: true, Label: "phone.field.headers", Help: "phone.help.headers"},
		Field{Key: "body", Multiline: true, Label: "phone.field.body", Help: "phone.help.body"},
		Field{Key: "success_status", Default: "200", Label: "phone.field.success_status", Help: "phone.help.success_status"},
		Field{Key: "success_path", Label: "phone.field.success_path", Help: "phone.help.success_path"},
		Field{Key: "success_value", Label: "phone.field.success_value", Help: "phone.help.success_value"},
	)
	if voice {
		fs = append(fs, Field{Key: "callback_token", Required: true, Secret: true, Label: "channels.field.callback_token", Help: "phone.help.callback_token"})
	}
	return fs
}

// providerKeys are, by provider, the settings it needs and the ones it may have; the
// keys of every provider are refused on an account of another.
var providerKeys = map[string]struct{ required, optional []string }{
	ProviderAliyun:  {required: []string{"access_key_id", "access_key_secret"}, optional: []string{"base_url", "sign_name", "called_show_number"}},
	ProviderTencent: {required: []string{"secret_id", "secret_key", "sdk_app_id"}, optional: []string{"base_url", "sign_name", "region"}},
	ProviderHTTP:    {required: []string{"url"}, optional: []string{"method", "headers", "body", "success_status", "success_path", "success_value"}},
}

// checkPhone is the sms and voice platforms' rule across keys: the provider's keys
// present, no other provider's, an SMS sign name for the clouds, and a body template
// and success rule that read.
func checkPhone(voice bool) func(cfg map[string]string, allowPrivate bool) error {
	return func(cfg map[string]string, _ bool) error {
		provider := strings.TrimSpace(cfg["provider"])
		keys := providerKeys[provider]
		for _, k := range keys.required {
			if strings.TrimSpace(cfg[k]) == "" {
				return note("phone.config.required_for", "Provider", provider).invalid("config." + k)
			}
		}
		if !voice && provider != ProviderHTTP && strings.TrimSpace(cfg["sign_name"]) == "" {
			return note("phone.config.required_for", "Provider", provider).invalid("config.sign_name")
		}
		for _, k := range slices.Sorted(maps.Keys(cfg)) {
			v := cfg[k]
			// A choice's default is what a form sends for a setting left alone.
			if v == "" || k == "provider" || k == "callback_token" || (k == "method" && v == http.MethodPost) || (k == "success_status" && v == "200") {
				continue
			}
			if !slices.Contains(keys.required, k) && !slices.Contains(keys.optional, k) {
				return note("phone.config.not_for", "Provider", provider).invalid("config." + k)
			}
		}
		if provider != ProviderHTTP {
			return nil
		}
		if _, err := parseBodyTemplate(cfg["body"]); err != nil {
			return note("phone.config.body", "Error", err.Error()).invalid("config.body")
		}
		if s := cfg["success_status"]; s != "" {
			if n, err := strconv.Atoi(s); err != nil || n < 100 || n > 599 {
				return note("phone.config.status").invalid("config.success_status")
			}
		}
		if _, err := parseHeaders(cfg["headers"]); err != nil {
			return note("phone.config.headers", "Error", err.Error()).invalid("config.headers")
		}
		if (cfg["success_path"] == "") != (cfg["success_value"] == "") {
			return note("phone.config.success_pair").invalid("config.success_value")
		}
		return nil
	}
}

// buildPhone makes the adapter of an sms or voice account for its provider.
func buildPhone(_ *Registry, a Account) (Sender, error) {
	switch a.Config["provider"] {
	case ProviderAliyun:
		return newAliyun(a.Platform, a.Config, a.AllowPrivateNetwork), nil
	case ProviderTencent:
		return newTencent(a.Platform, a.Config, a.AllowPrivateNetwork), nil
	}
	return newPhoneGateway(a.Platform, a.Config, a.AllowPrivateNetwork)
}

// TTSCap is the longest text a voice provider reads out in one call, in characters:
// Herald cuts the spoken text (each parameter, from the last) to it rather than have
// the provider refuse the call.
func TTSCap(provider string) int {
	switch provider {
	case ProviderAliyun:
		return 300 // Dyvmsapi's TTS: the template with its variables filled in
	case ProviderTencent:
		return 200 // VMS: a template's text with its parameters
	}
	return 500
}

// trimSpoken cuts a call's parameters so the template text they fill stays within
// capChars characters counted over the parameters: the last parameters are cut
// first, since an alert's notice puts what matters first.
func trimSpoken(params []Param, capChars int) []Param {
	total := 0
	for _, p := range params {
		total += utf8.RuneCountInString(p.Value)
	}
	out := make([]Param, len(params))
	copy(out, params)
	for i := len(out) - 1; i >= 0 && total > capChars; i-- {
		n := utf8.RuneCountInString(out[i].Value)
		keep := max(n-(total-capChars), 0)
		out[i].Value = ContentCap{Max: keep, Unit: Characters}.Truncate(out[i].Value)
		total -= n - utf8.RuneCountInString(out[i].Value)
	}
	return out
}

var (
	mainlandNumber = regexp.MustCompile(`^1[3-9][0-9]{9}$`)
	e164Number     = regexp.MustCompile(`^\+[1-9][0-9]{7,14}$`)
)

// phoneNumber reads a stored mobile number (eleven mainland digits, or E.164) as the
// two forms providers want: national (the mainland digits alone, else the E.164 digits
// without +) and e164 (+86 and the digits for the mainland). ok is false for anything
// that is not a number: the message is refused, as to an invalid address.
func phoneNumber(to string) (national, e164 string, ok bool) {
	to = strings.TrimSpace(to)
	if rest, cut := strings.CutPrefix(to, "+86"); cut && mainlandNumber.MatchString(rest) {
		to = rest
	}
	switch {
	case mainlandNumber.MatchString(to):
		return to, "+86" + to, true
	case e164Number.MatchString(to):
		return to[1:], to, true
	}
	return "", "", false
}

// templatedTo checks what a cloud provider needs of a message: a number to send to (in
// its two forms, see phoneNumber) and a provider template to send.
func templatedTo(prefix string, m Message) (national, e164 string, err error) {
	national, e164, ok := phoneNumber(m.To)
	if !ok {
		return "", "", badNumber(prefix, m.To)
	}
	if m.ProviderTemplate == "" {
		return "", "", Errorf(Permanent, "no_template", "%s: the message names no provider template", prefix)
	}
	return national, e164, nil
}

// badNumber is the error of a message to something that is not a phone number.
func badNumber(prefix, to string) error {
	return Errorf(Permanent, "invalid_number", "%s: %q is not a mobile number", prefix, to)
}

// paramsObject is a template's parameters as a JSON object (Alibaba's TemplateParam).
func paramsObject(params []Param) string {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range params {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.Name)
		v, _ := json.Marshal(p.Value)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String()
}

// paramValues are a template's parameter values in order (Tencent's TemplateParamSet).
func paramValues(params []Param) []string {
	out := make([]string, len(params))
	for i, p := range params {
		out[i] = p.Value
	}
	return out
}

// wantsKeypad says a call asks its callee to press 1: an alert's notice, which has the
// acknowledge action.
func wantsKeypad(m Message) bool {
	for _, a := range m.Actions {
		if a.Key == AckAction {
			return true
		}
	}
	return false
}

// checkReportToken checks a voice report's token (the callback URL's ?token=, or the
// X-Herald-Token header a gateway may send instead) against the account's.
func checkReportToken(want string, h http.Header, query url.Values) error {
	got := query.Get("token")
	if got == "" {
		got = h.Get("X-Herald-Token")
	}
	if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return ErrForgedReport
	}
	return nil
}

// PhoneGateway sends SMS through a bank's own gateway, or places calls through its IVR,
// over HTTP: a request built from the account's body template, and success read from
// the answer's status and, optionally, a value at a JSON path. It is safe for
// concurrent use.
type PhoneGateway struct {
	platform string
	url      string
	method   string
	header   http.Header
	body     *template.Template
	status   int
	path     []string
	value    string
	token    string
	client   *http.Client
	prefix   string
}

// newPhoneGateway is the http provider's adapter for a validated config.
func newPhoneGateway(platform string, cfg map[string]string, allowPrivate bool) (*PhoneGateway, error) {
	body, err := parseBodyTemplate(cfg["body"])
	if err != nil {
		return nil, err
	}
	header, err := parseHeaders(cfg["headers"])
	if err != nil {
		return nil, err
	}
	status, _ := strconv.Atoi(cfg["success_status"])
	if status == 0 {
		status = http.StatusOK
	}
	method := cfg["method"]
	if method == "" {
		method = http.MethodPost
	}
	g := &PhoneGateway{platform: platform, url: strings.TrimSpace(cfg["url"]), method: method, header: header, body: body,
		status: status, value: cfg["success_value"], token: cfg["callback_token"],
		client: NewHTTPClient(allowPrivate, backstopTimeout), prefix: "channels: " + platform + " gateway"}
	if p := strings.TrimSpace(cfg["success_path"]); p != "" {
		g.path = strings.Split(p, ".")
	}
	return g, nil
}

// defaultGatewayBody is the body sent when an account gives no template.
const defaultGatewayBody = `{"to":{{json .To}},"content":{{json .Content}},"request_id":{{json .ID}},"template":{{json .Template}},"params":{{json .Params}}}`

// gatewayData is what a body template is given.
type gatewayData struct {
	ID, To, Content, Template string
	// Params are the provider template's parameters by name.
	Params map[string]string
}

// parseBodyTemplate reads a gateway body template (Go template syntax, with json to
// quote a value).
func parseBodyTemplate(text string) (*template.Template, error) {
	if strings.TrimSpace(text) == "" {
		text = defaultGatewayBody
	}
	return template.New("body").Option("missingkey=error").Funcs(template.FuncMap{
		"json": func(v any) (string, error) {
			b, err := json.Marshal(v)
			return string(b), err
		},
	}).Parse(text)
}

// parseHeaders reads "Name: value" lines.
func parseHeaders(text string) (http.Header, error) {
	h := http.Header{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "" || strings.ContainsAny(strings.TrimSpace(name), " \t") {
			return nil, fmt.Errorf("%q is not a Name: value line", line)
		}
		h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	return h, nil
}

// Send implements Sender.
func (g *PhoneGateway) Send(ctx context.Context, m Message) (Receipt, error) {
	if _, _, ok := phoneNumber(m.To); !ok {
		return Receipt{}, badNumber(g.prefix, m.To)
	}
	params := map[string]string{}
	for _, p := range m.Params {
		params[p.Name] = p.Value
	}
	var body bytes.Buffer
	if err := g.body.Execute(&body, gatewayData{ID: m.ID, To: m.To, Content: m.Content, Template: m.ProviderTemplate, Params: params}); err != nil {
		return Receipt{}, Errorf(Permanent, "", "%s: the body template: %v", g.prefix, err)
	}
	target, reader := g.url, bytes.NewReader(body.Bytes())
	if g.method == http.MethodGet {
		// A GET carries the rendered body as its query.
		target, reader = appendQuery(g.url, body.String()), bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, g.method, target, reader)
	if err != nil {
		return Receipt{}, Errorf(Permanent, "", "%s: building the request: %v", g.prefix, unwrapURLError(err))
	}
	for k, v := range g.header {
		req.Header[k] = v
	}
	if req.Header.Get("Content-Type") == "" && g.method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-Request-Id", m.ID)
	r, err := call(g.client, req, g.prefix)
	if err != nil {
		return Receipt{}, err
	}
	if r.status != g.status {
		if e := statusError(g.prefix, r, ""); e != nil {
			return Receipt{}, e
		}
		return Receipt{}, Errorf(Permanent, r.httpCode(), "%s: %s where %d means success: %s", g.prefix, r.httpCode(), g.status, excerpt(r.body))
	}
	if len(g.path) > 0 {
		var doc any
		if json.Unmarshal(r.body, &doc) != nil {
			return Receipt{}, Errorf(Transient, r.httpCode(), "%s: unreadable answer: %s", g.prefix, excerpt(r.body))
		}
		if got, ok := jsonAt(doc, g.path); !ok || got != g.value {
			return Receipt{}, Errorf(Permanent, got, "%s: %s is %q, not %q: %s", g.prefix, strings.Join(g.path, "."), got, g.value, excerpt(r.body))
		}
	}
	return Receipt{ProviderMessageID: webhookReplyID(r.body)}, nil
}

// appendQuery adds a rendered query to a URL.
func appendQuery(target, query string) string {
	query = strings.TrimPrefix(strings.TrimSpace(query), "?")
	if query == "" {
		return target
	}
	if strings.Contains(target, "?") {
		return target + "&" + query
	}
	return target + "?" + query
}

// jsonAt reads the value at a dotted path of a JSON document as text.
func jsonAt(doc any, path []string) (string, bool) {
	for _, step := range path {
		switch v := doc.(type) {
		case map[string]any:
			next, ok := v[step]
			if !ok {
				return "", false
			}
			doc = next
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(v) {
				return "", false
			}
			doc = v[i]
		default:
			return "", false
		}
	}
	switch v := doc.(type) {
	case string:
		return v, true
	case nil:
		return "null", true
	default:
		b, _ := json.Marshal(v)
		return string(b), true
	}
}

// gatewayReport is one call report of an in-house IVR, in Herald's own format.
type gatewayReport struct {
	MessageID string    `json:"message_id"`
	CallID    string    `json:"call_id"`
	Callee    string    `json:"callee"`
	Outcome   string    `json:"outcome"`
	Keys      string    `json:"keys"`
	At        time.Time `json:"at"`
}

// Reports implements VoiceReporter: the IVR posts one report or an array of them, with
// the account's token.
func (g *PhoneGateway) Reports(h http.Header, query url.Values, body []byte) ([]VoiceReport, error) {
	if err := checkReportToken(g.token, h, query); err != nil {
		return nil, err
	}
	var items []gatewayReport
	if err := decodeOneOrMany(body, &items); err != nil {
		return nil, fmt.Errorf("%s: reading the report: %w", g.prefix, err)
	}
	out := make([]VoiceReport, 0, len(items))
	for _, it := range items {
		switch it.Outcome {
		case VoiceAnswered, VoiceNoAnswer, VoiceBusy, VoiceFailed:
		default:
			return nil, fmt.Errorf("%s: outcome %q is not answered, no_answer, busy or failed", g.prefix, it.Outcome)
		}
		out = append(out, VoiceReport{MessageID: it.MessageID, CallID: it.CallID, Callee: it.Callee, Outcome: it.Outcome, Keys: it.Keys, At: it.At})
	}
	return out, nil
}

// decodeOneOrMany reads a JSON array, or one object as an array of one.
func decodeOneOrMany[T any](body []byte, out *[]T) error {
	body = bytes.TrimSpace(body)
	if bytes.HasPrefix(body, []byte("[")) {
		return json.Unmarshal(body, out)
	}
	var one T
	if err := json.Unmarshal(body, &one); err != nil {
		return err
	}
	*out = []T{one}
	return nil
}

// Probe makes a HEAD request to the gateway: it has no call that sends nothing.
func (g *PhoneGateway) Probe(ctx context.Context) ProbeResult {
	res, _ := probeHead(ctx, g.client, g.prefix, note("phone.probe.gateway"), g.url, g.header, note("phone.probe.gateway_unchecked"))
	return res
}

// Segments is how an SMS of text is billed: its length in characters and the number
// of segments it takes. Text of GSM 7-bit characters alone fits 160 in one message and
// 153 a segment when longer; text with any other character (Chinese) fits 70, and 67 a
// segment when longer, as Alibaba Cloud and Tencent Cloud both count.
func Segments(text string) (chars, segments int) {
	chars = utf8.RuneCountInString(text)
	single, each := 160, 153
	for _, r := range text {
		if !gsm7(r) {
			single, each = 70, 67
			break
		}
	}
	switch {
	case chars == 0:
		return 0, 0
	case chars <= single:
		return chars, 1
	}
	return chars, (chars + each - 1) / each
}

// gsm7 says a character is in the GSM 03.38 basic set (the extension table's
// characters count as one here, as providers' estimates do).
func gsm7(r rune) bool {
	if r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
		return true
	}
	return strings.ContainsRune(" \n\r!\"#$%&'()*+,-./:;<=>?@_£¥èéùìòÇØøÅåΔΦΓΛΩΠΨΣΘΞÆæßÉ¤¡ÄÖÑÜ§¿äöñüà^{}\\[~]|€", r)
}
