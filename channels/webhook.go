package channels

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Webhook posts each message as JSON to a URL the account names, signed with
// HMAC-SHA256 when the account has a secret. It is safe for concurrent use.
type Webhook struct {
	url    string
	secret string
	client *http.Client
	now    func() time.Time
}

// WebhookSignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">".
// Signing the timestamp with the body lets receivers refuse replays of old requests.
const WebhookSignatureHeader = "X-Herald-Signature"

// NewWebhook returns the adapter for a webhook account's config (keys url, secret).
func NewWebhook(cfg map[string]string, allowPrivate bool) (*Webhook, error) {
	if err := ValidateConfig("webhook", cfg, allowPrivate); err != nil {
		return nil, fmt.Errorf("channels: webhook: %w", err)
	}
	return newWebhook(cfg, allowPrivate), nil
}

// newWebhook is NewWebhook for a config already validated.
func newWebhook(cfg map[string]string, allowPrivate bool) *Webhook {
	return &Webhook{
		url:    strings.TrimSpace(cfg["url"]),
		secret: cfg["secret"],
		client: NewHTTPClient(allowPrivate, backstopTimeout),
		now:    time.Now,
	}
}

// webhookRequest is the body posted to the receiver.
type webhookRequest struct {
	RequestID string `json:"request_id"`
	To        string `json:"to"`
	MsgType   string `json:"msg_type"`
	Title     string `json:"title"`
	Content   string `json:"content"`
	SentAt    string `json:"sent_at"`
}

// Send implements Sender.
func (w *Webhook) Send(ctx context.Context, m Message) (Receipt, error) {
	msgType := m.MsgType
	if msgType == "" {
		msgType = "text"
	}
	now := w.now()
	body, err := json.Marshal(webhookRequest{RequestID: m.ID, To: m.To, MsgType: msgType, Title: m.Title,
		Content: m.Content, SentAt: now.UTC().Format(time.RFC3339)})
	if err != nil {
		return Receipt{}, Errorf(Permanent, "", "channels: webhook: encoding the message: %v", err)
	}
	header := http.Header{"X-Request-Id": {m.ID}}
	if w.secret != "" {
		header.Set(WebhookSignatureHeader, SignWebhook(w.secret, now, body))
	}
	r, err := postJSON(ctx, w.client, "channels: webhook", w.url, header, body)
	if err != nil {
		return Receipt{}, err
	}
	if e := statusError("channels: webhook", r, ""); e != nil {
		return Receipt{}, e
	}
	return Receipt{ProviderMessageID: webhookReplyID(r.body)}, nil
}

// PostSigned posts a JSON body to target signed with secret the way webhook messages
// are (WebhookSignatureHeader), with the given extra headers, and returns nil for a 2xx
// answer, else a classified *Error. Status callbacks go out through it.
func PostSigned(ctx context.Context, client *http.Client, target, secret string, header http.Header, body []byte, now time.Time) error {
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set(WebhookSignatureHeader, SignWebhook(secret, now, body))
	r, err := postJSON(ctx, client, "callback", target, h, body)
	if err != nil {
		return err
	}
	if e := statusError("callback", r, ""); e != nil {
		return e
	}
	return nil
}

// CheckURLField is CheckURL for a field of a form or a request: the problem, if any, as
// a *SettingError naming field.
func CheckURLField(field, raw string, allowPrivate bool) error {
	if problem := urlProblem(raw, allowPrivate); !problem.IsZero() {
		return problem.invalid(field)
	}
	return nil
}

// SignWebhook returns the X-Herald-Signature value for body sent at t.
func SignWebhook(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// webhookReplyID returns the "id" of a JSON answer, string or number, or "" when the
// receiver gave none: receivers owe us nothing but a 2xx.
func webhookReplyID(body []byte) string {
	var reply struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &reply) != nil || len(reply.ID) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(reply.ID, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(reply.ID, &n) == nil {
		return n.String()
	}
	return ""
}

// Probe makes a HEAD request to the receiver's URL, unsigned: there is no body to sign.
func (w *Webhook) Probe(ctx context.Context) ProbeResult {
	res, status := probeHead(ctx, w.client, "channels: webhook", note("channels.probe.webhook_receiver"), w.url, nil,
		note("channels.probe.webhook_unchecked"))
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		res.Steps = append(res.Steps, remark(note("channels.probe.webhook_unsigned")))
	}
	return res
}
