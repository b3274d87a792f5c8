package simulator

import (
	"crypto/rand"
	"sync"
	"time"
)

// tokenStore remembers issued WeCom access tokens with their expiry.
type tokenStore struct {
	mu      sync.Mutex
	expires map[string]time.Time
}

func newTokenStore() *tokenStore {
	return &tokenStore{expires: map[string]time.Time{}}
}

// forgetExpiredAfter is how long an expired token is still recognised, so a sender using
// it hears "expired" (and refreshes) rather than "invalid".
const forgetExpiredAfter = 24 * time.Hour

// issue creates a token valid for ttl from now.
func (ts *tokenStore) issue(now time.Time, ttl time.Duration) string {
	token := rand.Text()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for t, exp := range ts.expires {
		if now.Sub(exp) > forgetExpiredAfter {
			delete(ts.expires, t)
		}
	}
	ts.expires[token] = now.Add(ttl)
	return token
}

// tokenState is what the store knows about a presented token.
type tokenState int

const (
	tokenValid tokenState = iota
	tokenUnknown
	tokenExpired
)

// check reports whether token is valid at now.
func (ts *tokenStore) check(token string, now time.Time) tokenState {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	exp, ok := ts.expires[token]
	switch {
	case !ok:
		return tokenUnknown
	case !now.Before(exp):
		return tokenExpired
	}
	return tokenValid
}
