package channels

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// maxReplyBytes bounds how much of a provider's answer is read; real answers are tiny.
const maxReplyBytes = 64 << 10

// httpReply is a provider's answer, read in full.
type httpReply struct {
	status int
	header http.Header
	body   []byte
}

// httpCode is how an HTTP status appears in Error.Code.
func (r httpReply) httpCode() string { return "http " + strconv.Itoa(r.status) }

// call sends req and reads the answer. A failure to get one comes back classified:
// an address refused by the guard stays Permanent, anything else (connection errors,
// timeouts, a body cut short) is Transient. prefix names the adapter in messages.
//
// A start check the request's context carries (WithStartCheck) runs at its first byte;
// a call it stopped fails as Transient wrapping ErrLateStart.
func call(client *http.Client, req *http.Request, prefix string) (httpReply, error) {
	ctx, unbind := withStartCheck(req.Context())
	resp, err := client.Do(req.WithContext(ctx))
	if late := unbind(); late != nil && err != nil {
		return httpReply{}, &Error{Class: Transient, Err: fmt.Errorf("%s: %w", prefix, late)}
	}
	if err != nil {
		return httpReply{}, transportError(prefix, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return httpReply{}, &Error{Class: Transient, Code: "http " + strconv.Itoa(resp.StatusCode),
			Err: fmt.Errorf("%s: reading the answer: %w", prefix, unwrapURLError(err))}
	}
	// Drain what is left (within reason) so the connection goes back to the pool.
	io.CopyN(io.Discard, resp.Body, maxReplyBytes)
	return httpReply{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// postJSON posts a JSON body to target with the given extra headers.
func postJSON(ctx context.Context, client *http.Client, prefix, target string, header http.Header, body []byte) (httpReply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return httpReply{}, Errorf(Permanent, "", "%s: building the request: %v", prefix, unwrapURLError(err))
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	return call(client, req, prefix)
}

// transportError classifies a failure to get an answer at all.
func transportError(prefix string, err error) *Error {
	if ce, ok := errors.AsType[*Error](err); ok {
		// Refused by the address guard: keep its class, add where it happened.
		return &Error{Class: ce.Class, Code: ce.Code, RetryAfter: ce.RetryAfter, Err: fmt.Errorf("%s: %w", prefix, ce.Err)}
	}
	return &Error{Class: Transient, Err: fmt.Errorf("%s: %w", prefix, unwrapURLError(err))}
}

// unwrapURLError drops net/http's *url.Error wrapper, whose message repeats the URL:
// WeCom's URLs carry the access token or the corp secret, which must not reach logs.
func unwrapURLError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// statusError classifies an HTTP status outside 2xx the way every HTTP platform here
// uses it; it returns nil for 2xx. detail, if not empty, replaces the body excerpt.
func statusError(prefix string, r httpReply, detail string) *Error {
	if detail == "" {
		detail = excerpt(r.body)
	}
	code := r.httpCode()
	switch {
	case r.status >= 200 && r.status < 300:
		return nil
	case r.status >= 300 && r.status < 400:
		// Following could take the request anywhere; the account's URL is what counts.
		return Errorf(Permanent, code, "%s: %s: redirects are not followed (Location: %s); configure the final URL",
			prefix, code, excerpt([]byte(r.header.Get("Location"))))
	case r.status == http.StatusTooManyRequests:
		return &Error{Class: RateLimited, Code: code, RetryAfter: retryAfter(r.header, time.Now()),
			Err: fmt.Errorf("%s: %s: %s", prefix, code, detail)}
	case r.status == http.StatusUnauthorized, r.status == http.StatusForbidden:
		return Errorf(Auth, code, "%s: %s: %s", prefix, code, detail)
	case r.status >= 400 && r.status < 500:
		return Errorf(Permanent, code, "%s: %s: %s", prefix, code, detail)
	}
	// 5xx, and anything stranger: the provider may do better next time.
	return Errorf(Transient, code, "%s: %s: %s", prefix, code, detail)
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP date; 0 if absent.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// excerpt turns the start of a provider's answer into one printable line for an error
// message.
func excerpt(b []byte) string {
	const limit = 200
	s := strings.ToValidUTF8(cutBytes(string(b), limit), "")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(b) > limit {
		s += "…"
	}
	if s == "" {
		return "(empty answer)"
	}
	return s
}

// tokenCache keeps one account's access token (WeCom's access_token, Feishu's
// tenant_access_token) until shortly before it expires, and shares it between
// concurrent sends: when it needs a new one, one caller fetches it and the others wait
// for that fetch. It is safe for concurrent use.
type tokenCache struct {
	// prefix names the adapter in errors ("channels: wecom").
	prefix string
	// fetch asks the platform for a token and how long it lives.
	fetch func(ctx context.Context) (token string, ttl time.Duration, err error)
	now   func() time.Time

	mu       sync.Mutex // guards the fields below
	token    string
	expires  time.Time  // when to stop using token
	fetching *tokenCall // the token request in flight, if any
}

// tokenCall is one token request that every send needing a token waits for.
type tokenCall struct {
	done  chan struct{}
	token string
	err   error
}

const (
	// tokenFetchTimeout bounds a token request. It runs detached from the send that
	// started it, so one impatient caller cannot fail the others waiting on it.
	tokenFetchTimeout = 15 * time.Second
	// maxTokenMargin is how long before its stated expiry a token is retired, so a send
	// does not carry a token that expires on the way.
	maxTokenMargin = 5 * time.Minute
)

// get returns a valid token, fetching one if needed. Concurrent callers share one
// fetch; each still gives up when its own context ends.
func (c *tokenCache) get(ctx context.Context) (string, error) {
	c.mu.Lock()
	if c.token != "" && c.now().Before(c.expires) {
		token := c.token
		c.mu.Unlock()
		return token, nil
	}
	call := c.fetching
	if call == nil {
		call = &tokenCall{done: make(chan struct{})}
		c.fetching = call
		fetchCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tokenFetchTimeout)
		go func() {
			defer cancel()
			c.run(fetchCtx, call)
		}()
	}
	c.mu.Unlock()

	select {
	case <-call.done:
		return call.token, call.err
	case <-ctx.Done():
		return "", Errorf(Transient, "", "%s: waiting for an access token: %v", c.prefix, ctx.Err())
	}
}

// run makes one fetch, stores its result and wakes the waiters.
func (c *tokenCache) run(ctx context.Context, call *tokenCall) {
	started := c.now()
	token, ttl, err := c.fetch(ctx)
	c.mu.Lock()
	if err == nil {
		c.token = token
		// Retire the token early: 10 % of its life, at most five minutes.
		c.expires = started.Add(ttl - min(ttl/10, maxTokenMargin))
	} else {
		token = ""
	}
	c.fetching = nil
	c.mu.Unlock()
	call.token, call.err = token, err
	close(call.done)
}

// drop forgets token if it is still the cached one; a newer token fetched by a
// concurrent send stays.
func (c *tokenCache) drop(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == token {
		c.token = ""
		c.expires = time.Time{}
	}
}

// codeAction is what a platform's error code means for a call.
type codeAction struct {
	class Class
	// refreshToken marks codes saying the access token is bad: drop it and try once
	// more with a new one.
	refreshToken bool
	meaning      string
}

// tokenAnswer is what a token request brought back, as a connection test shows it.
type tokenAnswer struct {
	// codeName is what the platform calls its code field (errcode, code); code is nil
	// when the answer had none.
	codeName string
	code     *int
	msg      string
	// lifetime names the token's life as the platform gave it ("expires_in 7200").
	lifetime string
}

// tokenProbe is the connection test of a platform whose test is one token request:
// the request, what came back, and a summary under channels.probe.<platform>_… (ok is
// the caller's, for success; _unreachable, _refused, _refused_credentials, _no_token).
func tokenProbe(platform, request string, r httpReply, a tokenAnswer, err error, ok Note) ProbeResult {
	answer := answerNote(r)
	if r.status != 0 {
		line := answer.Text
		if a.code != nil {
			line += fmt.Sprintf(", %s %d (%s)", a.codeName, *a.code, excerpt([]byte(a.msg)))
		}
		if err == nil {
			line += ", " + a.lifetime
		}
		answer = verbatim(line)
	}
	step := exchange(verbatim(request), answer)
	if err == nil {
		return ProbeResult{OK: true, Summary: ok, Steps: []ProbeStep{step}}
	}
	key := "channels.probe." + platform
	res := ProbeResult{Steps: []ProbeStep{step, failedWith(err)}}
	switch {
	case r.status == 0:
		res.Summary = note(key+"_unreachable", "Problem", noAnswer(err))
	case a.code != nil && *a.code != 0:
		key += "_refused"
		if Classify(err).Class == Auth {
			key += "_credentials"
		}
		res.Summary = note(key, "Code", *a.code, "Message", excerpt([]byte(a.msg)))
	default:
		res.Summary = note(key+"_no_token", "Error", err.Error())
	}
	return res
}
