package simulator

import (
	"sync"
	"time"
)

// window is one documented limit: at most n calls in any interval of length per.
type window struct {
	n   int
	per time.Duration
}

// windowCounter keeps documented limits per key (a member, a user, an application) the
// strict way: a call is within them only if, for every window, fewer than n calls were
// admitted in the trailing interval (now−per, now]. That is the promise Herald's limiter
// makes, so a platform kept by this counter finds fault with every call Herald should
// not have made, and with none it should have. Only admitted calls count. It is safe for
// concurrent use.
type windowCounter struct {
	windows []window
	longest time.Duration

	mu    sync.Mutex
	calls map[string][]time.Time // by key, oldest first, none older than longest
}

// newWindowCounter returns a counter of the given windows; with none it admits every
// call.
func newWindowCounter(windows ...window) *windowCounter {
	c := &windowCounter{windows: windows, calls: map[string][]time.Time{}}
	for _, w := range windows {
		c.longest = max(c.longest, w.per)
	}
	return c
}

// admit records a call for key at now if every window has room for it, and says so;
// when one has none it records nothing and returns how long until the earliest
// blocking call leaves its window.
func (c *windowCounter) admit(key string, now time.Time) (bool, time.Duration) {
	ok, wait, _ := c.admitWindow(key, now)
	return ok, wait
}

// admitWindow is admit that also names, when it refuses, the length of the longest
// window that is full: a provider's refusal says which limit was hit.
func (c *windowCounter) admitWindow(key string, now time.Time) (bool, time.Duration, time.Duration) {
	if len(c.windows) == 0 {
		return true, 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := c.calls[key]
	drop := 0
	for drop < len(calls) && !calls[drop].After(now.Add(-c.longest)) {
		drop++
	}
	calls = calls[drop:]
	var wait, full time.Duration
	for _, w := range c.windows {
		// The calls inside (now−per, now] are the last ones, from the first after now−per.
		inside := 0
		for i := len(calls) - 1; i >= 0 && calls[i].After(now.Add(-w.per)); i-- {
			inside++
		}
		if inside >= w.n {
			// Room comes back when the n-th latest call leaves the window.
			wait = max(wait, calls[len(calls)-w.n].Add(w.per).Sub(now))
			full = max(full, w.per)
		}
	}
	if wait > 0 {
		c.store(key, calls)
		return false, wait, full
	}
	c.store(key, append(calls, now))
	return true, 0, 0
}

// store keeps key's calls, forgetting a key with none so the map does not grow with
// every member ever addressed.
func (c *windowCounter) store(key string, calls []time.Time) {
	if len(calls) == 0 {
		delete(c.calls, key)
		return
	}
	c.calls[key] = calls
}

// reset forgets every call.
func (c *windowCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = map[string][]time.Time{}
}
