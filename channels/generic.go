package channels

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Generic sends through the in-house IM contract shared by Tianyuan and Zhaohu:
// POST {base_url}{path} with a bearer token and a JSON body,
// answered with {"code":0,"msg_id":…} on success. It is safe for concurrent use.
type Generic struct {
	platform string // "tianyuan" or "zhaohu"; names deliveries and errors
	url      string
	token    string
	client   *http.Client
	prefix   string // "channels: tianyuan"
}

// defaultGenericPath is where the contract's messages endpoint lives under base_url.
const defaultGenericPath = "/messages"

// NewGeneric returns the adapter for a Tianyuan or Zhaohu account's config (keys
// base_url, path, token).
func NewGeneric(platform string, cfg map[string]string, allowPrivate bool) (*Generic, error) {
	if platform != "tianyuan" && platform != "zhaohu" {
		return nil, fmt.Errorf("channels: %q does not use the generic contract", platform)
	}
	if err := ValidateConfig(platform, cfg, allowPrivate); err != nil {
		return nil, fmt.Errorf("channels: %s: %w", platform, err)
	}
	return newGeneric(platform, cfg, allowPrivate), nil
}

// newGeneric is NewGeneric for a config already validated.
func newGeneric(platform string, cfg map[string]string, allowPrivate bool) *Generic {
	path := cfg["path"]
	if path == "" {
		path = defaultGenericPath
	}
	return &Generic{
		platform: platform,
		url:      strings.TrimRight(strings.TrimSpace(cfg["base_url"]), "/") + path,
		token:    cfg["token"],
		client:   NewHTTPClient(allowPrivate, backstopTimeout),
		prefix:   "channels: " + platform,
	}
}

// genericRequest is the body of a send.
type genericRequest struct {
	To        string `json:"to"`
	MsgType   string `json:"msg_type"`
	Title     string `json:"title"`
	Content   string `json:"content"`
	RequestID string `json:"request_id"`
}

// genericReply is every answer of the contract; a missing code is not a success.
type genericReply struct {
	Code    *int   `json:"code"`
	Message string `json:"message"`
	MsgID   string `json:"msg_id"`
}

// Send implements Sender.
func (g *Generic) Send(ctx context.Context, m Message) (Receipt, error) {
	msgType := m.MsgType
	if msgType == "" {
		msgType = "text"
	}
	body, err := json.Marshal(genericRequest{To: m.To, MsgType: msgType, Title: m.Title, Content: m.Content, RequestID: m.ID})
	if err != nil {
		return Receipt{}, Errorf(Permanent, "", "%s: encoding the message: %v", g.prefix, err)
	}
	header := http.Header{
		"Authorization": {g.authorization()},
		"X-Request-Id":  {m.ID},
	}
	r, err := postJSON(ctx, g.client, g.prefix, g.url, header, body)
	if err != nil {
		return Receipt{}, err
	}
	var reply genericReply
	decodeErr := json.Unmarshal(r.body, &reply)
	if r.status < 200 || r.status >= 300 {
		detail := ""
		if decodeErr == nil && reply.Code != nil {
			detail = fmt.Sprintf("code %d: %s", *reply.Code, reply.Message)
		}
		return Receipt{}, statusError(g.prefix, r, detail)
	}
	if decodeErr != nil || reply.Code == nil {
		// A 2xx we cannot read may or may not have been delivered; retrying is the
		// lesser harm, and request_id lets the platform drop the duplicate.
		return Receipt{}, Errorf(Transient, r.httpCode(), "%s: unreadable answer: %s", g.prefix, excerpt(r.body))
	}
	if *reply.Code == 0 {
		return Receipt{ProviderMessageID: reply.MsgID}, nil
	}
	code := strconv.Itoa(*reply.Code)
	e := Errorf(genericCodeClass(*reply.Code), code, "%s: code %s: %s", g.prefix, code, excerpt([]byte(reply.Message)))
	if e.Class == RateLimited {
		e.RetryAfter = retryAfter(r.header, time.Now())
	}
	return Receipt{}, e
}

// authorization is the Authorization header of every request to the platform.
func (g *Generic) authorization() string { return "Bearer " + g.token }

// genericCodeClass maps a non-zero code of the contract to an error class: the first
// three digits repeat the HTTP status they stand for.
func genericCodeClass(code int) Class {
	switch family := code / 100; {
	case family == 429:
		return RateLimited
	case family == 401, family == 403:
		return Auth
	case family >= 400 && family < 500:
		return Permanent
	}
	// 5xxxx and codes outside the contract: retry a bounded number of times.
	return Transient
}

// Probe makes a HEAD request to the messages endpoint with the send's bearer token: the
// contract has no call that checks the token without sending.
func (g *Generic) Probe(ctx context.Context) ProbeResult {
	// Platform is the platform's value (English), PlatformName its name in the reader's
	// language; each catalog uses the one it reads best with.
	name := note("channels.probe.endpoint", "Platform", g.platform, "PlatformName", note("platform."+g.platform))
	res, _ := probeHead(ctx, g.client, g.prefix, name, g.url, http.Header{"Authorization": {g.authorization()}},
		note("channels.probe.generic_unchecked", "Platform", g.platform, "PlatformName", note("platform."+g.platform)))
	return res
}
