package channels

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Feishu sends Feishu (飞书, Lark) application messages as the application's bot, to
// one user each, addressed by user_id. It fetches a tenant_access_token with the app's
// id and secret, keeps it until shortly before it expires, and shares it between
// concurrent sends; it is safe for concurrent use, and the registry keeps one instance
// per account so the token outlives single sends.
type Feishu struct {
	baseURL   string
	appID     string
	appSecret string
	client    *http.Client
	now       func() time.Time
	tokens    *tokenCache
}

// DefaultFeishuBaseURL is Feishu's open platform host.
const DefaultFeishuBaseURL = "https://open.feishu.cn"

// Feishu's API paths.
const (
	feishuTokenPath    = "/open-apis/auth/v3/tenant_access_token/internal"
	feishuMessagesPath = "/open-apis/im/v1/messages"
)

// NewFeishu returns the adapter for a Feishu account's config (keys app_id,
// app_secret, base_url).
func NewFeishu(cfg map[string]string, allowPrivate bool) (*Feishu, error) {
	if err := ValidateConfig("feishu", cfg, allowPrivate); err != nil {
		return nil, fmt.Errorf("channels: feishu: %w", err)
	}
	return newFeishu(cfg, allowPrivate), nil
}

// newFeishu is NewFeishu for a config already validated.
func newFeishu(cfg map[string]string, allowPrivate bool) *Feishu {
	base := strings.TrimSpace(cfg["base_url"])
	if base == "" {
		base = DefaultFeishuBaseURL
	}
	f := &Feishu{
		baseURL:   strings.TrimRight(base, "/"),
		appID:     cfg["app_id"],
		appSecret: cfg["app_secret"],
		client:    NewHTTPClient(allowPrivate, backstopTimeout),
		now:       time.Now,
	}
	// The cache reads f.now at each call, so a test may swap the clock after this.
	f.tokens = &tokenCache{prefix: "channels: feishu", now: func() time.Time { return f.now() },
		fetch: func(ctx context.Context) (string, time.Duration, error) {
			_, reply, err := f.requestToken(ctx)
			return reply.TenantAccessToken, time.Duration(reply.Expire) * time.Second, err
		}}
	return f
}

// Feishu codes Herald acts on by name.
const (
	feishuTokenMissing  = 99991661
	feishuTokenInvalid  = 99991663
	feishuRateLimited   = 99991400
	feishuMsgRecalled   = 230011
	feishuRecallExpired = 230009
)

// feishuErrors maps Feishu's codes to error classes. Codes not listed follow the HTTP
// status Feishu answered with (see feishuErrorAction).
var feishuErrors = map[int]codeAction{
	feishuTokenMissing: {Auth, true, "access token missing"},
	feishuTokenInvalid: {Auth, true, "tenant_access_token invalid or expired"},
	99991672:           {Auth, false, "the app lacks the permission (im:message:send_as_bot)"},
	99991401:           {Auth, false, "server IP not in the app's allow list"},
	10003:              {Auth, false, "invalid app_id or app_secret"},
	10014:              {Auth, false, "invalid app_secret"},
	230006:             {Auth, false, "bot ability not activated for the app"},
	230027:             {Auth, false, "the app lacks a necessary permission"},

	feishuRateLimited: {RateLimited, false, "request frequency limit"},
	230020:            {RateLimited, false, "frequency limit for this user or chat"},

	230001:              {Permanent, false, "invalid request parameter"},
	230002:              {Permanent, false, "bot not in the chat"},
	230013:              {Permanent, false, "user outside the bot's availability"},
	230025:              {Permanent, false, "content too long"},
	230028:              {Permanent, false, "content refused by the tenant's audit"},
	230099:              {Permanent, false, "message could not be built"},
	feishuRecallExpired: {Permanent, false, "recall window passed"},
	230026:              {Permanent, false, "no permission to recall this message"},
	230012:              {Permanent, false, "the bot did not send this message"},
}

// feishuErrorAction returns what a non-zero code means; status is the HTTP status it
// came with.
func feishuErrorAction(code, status int) codeAction {
	if a, ok := feishuErrors[code]; ok {
		return a
	}
	switch {
	case status >= 500:
		return codeAction{class: Transient, meaning: "server error"}
	case status >= 400:
		// Feishu answers request, permission and content errors with HTTP 400: the
		// same request will hit them again.
		return codeAction{class: Permanent, meaning: "request refused"}
	}
	return codeAction{class: Transient, meaning: "unexpected error"}
}

// feishuReply is the part of every Feishu answer this adapter reads.
type feishuReply struct {
	Code              *int   `json:"code"`
	Msg               string `json:"msg"`
	TenantAccessToken string `json:"tenant_access_token"`
	Expire            int64  `json:"expire"`
	Data              struct {
		MessageID string `json:"message_id"`
	} `json:"data"`
}

// feishuMessage is the body of POST /open-apis/im/v1/messages. Content is itself a
// JSON document, sent as a string. UUID makes Feishu send a request repeated within an
// hour only once, so a retry after a lost answer does not duplicate the message.
type feishuMessage struct {
	ReceiveID string `json:"receive_id"`
	MsgType   string `json:"msg_type"`
	Content   string `json:"content"`
	UUID      string `json:"uuid,omitempty"`
}

// feishuText is the content of a text message.
type feishuText struct {
	Text string `json:"text"`
}

// feishuPost is the content of a post (rich text) message in one language. Herald's
// markdown goes in one md element, which Feishu renders as its own paragraph.
type feishuPost struct {
	ZhCN feishuPostBody `json:"zh_cn"`
}

type feishuPostBody struct {
	Title   string                `json:"title"`
	Content [][]feishuPostElement `json:"content"`
}

type feishuPostElement struct {
	Tag  string `json:"tag"`
	Text string `json:"text"`
}

// marshalPlain encodes v as JSON without escaping <, > and &: Feishu reads them as they
// are, and escaping would grow a text toward the body limit six bytes a character.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// feishuBody builds the send body: a text message with the title leading the text, or
// a post with the title as its own and the markdown as its content. Text past the cap
// (a message queued before intake checked it) is cut on a character boundary.
func feishuBody(m Message) ([]byte, error) {
	msg := feishuMessage{ReceiveID: m.To, UUID: m.ID}
	// A group post @s its people with <at> elements after the text.
	mentions := mentionsText("feishu", m)
	room := Cap("feishu")
	room.Max -= room.Len(mentions)
	var content any
	if m.MsgType == "markdown" {
		msg.MsgType = "post"
		text := room.Truncate(m.Content) + mentions
		content = feishuPost{ZhCN: feishuPostBody{Title: m.Title, Content: [][]feishuPostElement{{{Tag: "md", Text: text}}}}}
	} else {
		msg.MsgType = "text"
		content = feishuText{Text: room.Truncate(feishuTextOf(m)) + mentions}
	}
	inner, err := marshalPlain(content)
	if err != nil {
		return nil, err
	}
	msg.Content = string(inner)
	return marshalPlain(msg)
}

// feishuTextOf is the text Feishu receives for a text message, and what the cap counts
// for either type: the title, if any, leads the content.
func feishuTextOf(m Message) string {
	if m.Title == "" {
		return m.Content
	}
	return m.Title + "\n\n" + m.Content
}

// Send implements Sender: to one user, or, for a group post, to a chat the app's bot
// is in.
func (f *Feishu) Send(ctx context.Context, m Message) (Receipt, error) {
	body, err := feishuBody(m)
	if err != nil {
		return Receipt{}, Errorf(Permanent, "", "channels: feishu: encoding the message: %v", err)
	}
	target := f.baseURL + feishuMessagesPath + "?receive_id_type=user_id"
	if m.Group {
		// A group post goes to the chat whose chat_id is m.To.
		target = f.baseURL + feishuMessagesPath + "?receive_id_type=chat_id"
	}
	reply, err := f.withToken(ctx, "send", func(token string) (httpReply, error) {
		return postJSON(ctx, f.client, "channels: feishu: send", target, bearer(token), body)
	})
	if err != nil {
		return Receipt{}, err
	}
	return Receipt{ProviderMessageID: reply.Data.MessageID}, nil
}

// Recall implements Recaller: DELETE /open-apis/im/v1/messages/:message_id. Feishu lets
// the bot recall its own messages within the window the tenant's administrator sets
// (24 hours unless changed); past it Feishu answers 230009, a permanent error. A message
// already recalled counts as recalled.
func (f *Feishu) Recall(ctx context.Context, m Message, receipt Receipt) error {
	if receipt.ProviderMessageID == "" {
		return Errorf(Permanent, "", "channels: feishu: recall: no message_id to recall")
	}
	target := f.baseURL + feishuMessagesPath + "/" + url.PathEscape(receipt.ProviderMessageID)
	_, err := f.withToken(ctx, "recall", func(token string) (httpReply, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, target, nil)
		if err != nil {
			return httpReply{}, Errorf(Permanent, "", "channels: feishu: recall: building the request: %v", unwrapURLError(err))
		}
		req.Header = bearer(token)
		return call(f.client, req, "channels: feishu: recall")
	})
	if ce, ok := err.(*Error); ok && ce.Code == strconv.Itoa(feishuMsgRecalled) {
		return nil
	}
	return err
}

// bearer is the header carrying a tenant_access_token.
func bearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}

// withToken makes one call with the cached token and reads Feishu's answer. A token
// rejected as missing, invalid or expired is replaced and the call made once more:
// Feishu refused the first before acting on it, so this cannot duplicate.
func (f *Feishu) withToken(ctx context.Context, step string, do func(token string) (httpReply, error)) (feishuReply, error) {
	for attempt := 1; ; attempt++ {
		token, err := f.tokens.get(ctx)
		if err != nil {
			return feishuReply{}, err
		}
		r, err := do(token)
		if err != nil {
			return feishuReply{}, err
		}
		reply, action, err := readFeishuReply(r, step)
		if err == nil {
			return reply, nil
		}
		if action.class == Auth {
			f.tokens.drop(token)
		}
		if !action.refreshToken || attempt == 2 {
			return feishuReply{}, err
		}
	}
}

// readFeishuReply decodes a Feishu answer. Feishu answers errors with an HTTP status
// (400, 429, 5xx) and a JSON body whose code says more; the code decides, and the
// status where the body has none. On failure it also returns what the answer meant.
func readFeishuReply(r httpReply, step string) (feishuReply, codeAction, error) {
	prefix := "channels: feishu: " + step
	var reply feishuReply
	readable := json.Unmarshal(r.body, &reply) == nil && reply.Code != nil
	switch {
	case r.status == http.StatusTooManyRequests || readable && *reply.Code == feishuRateLimited:
		e := Errorf(RateLimited, r.httpCode(), "%s: %s: %s", prefix, r.httpCode(), excerpt(r.body))
		if readable {
			e.Code = strconv.Itoa(*reply.Code)
		}
		e.RetryAfter = feishuRetryAfter(r.header)
		return reply, codeAction{class: RateLimited}, e
	case !readable:
		if e := statusError(prefix, r, ""); e != nil {
			return reply, codeAction{class: e.Class}, e
		}
		return reply, codeAction{class: Transient}, Errorf(Transient, r.httpCode(), "%s: unreadable answer: %s", prefix, excerpt(r.body))
	case *reply.Code != 0:
		code := *reply.Code
		action := feishuErrorAction(code, r.status)
		return reply, action, Errorf(action.class, strconv.Itoa(code), "%s: code %d (%s): %s",
			prefix, code, action.meaning, excerpt([]byte(reply.Msg)))
	case r.status < 200 || r.status >= 300:
		e := statusError(prefix, r, "")
		return reply, codeAction{class: e.Class}, e
	}
	return reply, codeAction{}, nil
}

// feishuRetryAfter is the wait Feishu asks for: x-ogw-ratelimit-reset, the seconds
// until its window resets; a Retry-After header, should a proxy add one, otherwise.
func feishuRetryAfter(h http.Header) time.Duration {
	if v := strings.TrimSpace(h.Get("X-Ogw-Ratelimit-Reset")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			return time.Duration(min(n, int64(time.Hour/time.Second))) * time.Second
		}
	}
	return retryAfter(h, time.Now())
}

// feishuTokenRequest is the body of tenant_access_token/internal.
type feishuTokenRequest struct {
	AppID     string `json:"app_id"`
	AppSecret string `json:"app_secret"`
}

// requestToken calls tenant_access_token/internal. On success the reply holds the
// token and its lifetime. Whatever the outcome it also returns what Feishu answered
// (status 0 when nothing came), which a connection test reports.
func (f *Feishu) requestToken(ctx context.Context) (httpReply, feishuReply, error) {
	body, err := json.Marshal(feishuTokenRequest{AppID: f.appID, AppSecret: f.appSecret})
	if err != nil {
		return httpReply{}, feishuReply{}, Errorf(Permanent, "", "channels: feishu: token: %v", err)
	}
	r, err := postJSON(ctx, f.client, "channels: feishu: token", f.baseURL+feishuTokenPath, nil, body)
	if err != nil {
		return httpReply{}, feishuReply{}, err
	}
	reply, action, err := readFeishuReply(r, "token")
	if err != nil {
		if ce, ok := err.(*Error); ok && action.refreshToken {
			// Token codes cannot describe the token request itself: bad credentials.
			ce.Class = Auth
		}
		return r, reply, err
	}
	if reply.TenantAccessToken == "" || reply.Expire <= 0 {
		return r, reply, Errorf(Transient, "", "channels: feishu: token: answer without a token or expiry")
	}
	return r, reply, nil
}

// Probe asks Feishu for a tenant_access_token, through the same call a send makes when
// it needs one, and reports what Feishu said.
func (f *Feishu) Probe(ctx context.Context) ProbeResult {
	r, reply, err := f.requestToken(ctx)
	return tokenProbe("feishu", "POST "+f.baseURL+feishuTokenPath, r,
		tokenAnswer{codeName: "code", code: reply.Code, msg: reply.Msg, lifetime: fmt.Sprintf("expire %d", reply.Expire)},
		err, note("channels.probe.feishu_ok", "Seconds", reply.Expire))
}
