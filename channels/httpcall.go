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
	unbind()
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
