package channels

import (
	"context"
	"fmt"
	"sync"
	"time"
)

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
