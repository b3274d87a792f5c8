package channels

import (
	"context"
	"sync"
	"time"
)

// tokenCache keeps one access token for an adapter whose platform issues tokens that
// live for a while (DingTalk): it fetches one when none is valid, retires it a little
// before it expires, and makes concurrent sends share one fetch.
type tokenCache struct {
	// prefix names the adapter in errors.
	prefix string
	// fetch asks the platform for a token and its lifetime.
	fetch func(ctx context.Context) (token string, ttl time.Duration, err error)
	now   func() time.Time

	mu       sync.Mutex // guards the fields below
	token    string
	expires  time.Time
	fetching *tokenCall
}

// get returns a valid token, fetching one if needed. The fetch runs detached from the
// caller (tokenFetchTimeout), so one impatient send cannot fail the others waiting on
// it; each caller still gives up when its own context ends.
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

// run makes one fetch, keeps its token and wakes the waiters.
func (c *tokenCache) run(ctx context.Context, call *tokenCall) {
	started := c.now()
	token, ttl, err := c.fetch(ctx)
	c.mu.Lock()
	if err == nil {
		c.token = token
		// Retire the token early: 10 % of its life, at most five minutes.
		c.expires = started.Add(ttl - min(ttl/10, maxTokenMargin))
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
		c.token, c.expires = "", time.Time{}
	}
}
