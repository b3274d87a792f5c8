package sending

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"herald/kernel"
)

// AccountCache keeps accounts for a few seconds, so a busy worker or API does not read
// and decrypt an account row for every message. An edit takes effect within the TTL.
// Concurrent misses for one account share a single read: when an entry expires under
// thousands of requests a second, one of them reads the row while the others wait for
// it, rather than each reading it and slowing the database for the next.
type AccountCache struct {
	store *AccountBook
	ttl   time.Duration
	reads singleflight.Group

	mu sync.Mutex
	// generation counts Forget calls: a read begun before one does not fill the cache,
	// and a request after one does not join a read begun before it.
	generation uint64
	items      map[string]cachedAccount
}

type cachedAccount struct {
	at      time.Time
	account *Account
}

// NewAccountCache returns a cache over the store.
func (s *AccountBook) NewAccountCache(ttl time.Duration) *AccountCache {
	return &AccountCache{store: s, ttl: ttl, items: map[string]cachedAccount{}}
}

// get returns the account cached under key, or reads it with load. It gives up when ctx
// ends, even while a read it joined goes on for other requests.
func (c *AccountCache) get(ctx context.Context, key string, load func(context.Context) (*Account, error)) (*Account, error) {
	c.mu.Lock()
	it, ok := c.items[key]
	generation := c.generation
	c.mu.Unlock()
	if ok && time.Since(it.at) < c.ttl {
		return it.account, nil
	}
	res := c.reads.DoChan(key+"#"+strconv.FormatUint(generation, 10), func() (any, error) {
		return c.read(ctx, key, generation, load)
	})
	select {
	case r := <-res:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*Account), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read loads an account and keeps it.
func (c *AccountCache) read(ctx context.Context, key string, generation uint64, load func(context.Context) (*Account, error)) (*Account, error) {
	readCtx, cancel := kernel.SharedRead(ctx)
	defer cancel()
	// The entry ages from before the read, so a slow read cannot stretch the time an
	// edit made elsewhere waits.
	started := time.Now()
	a, err := load(readCtx)
	if err != nil {
		return nil, err
	}
	if a.Unreadable {
		// Nothing sends through an account whose credentials no key opens.
		return nil, fmt.Errorf("sending: account %s: %w", a.Name, kernel.ErrUnreadable)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.generation == generation {
		c.items[key] = cachedAccount{at: started, account: a}
	}
	return a, nil
}

// ByID returns an account by id.
func (c *AccountCache) ByID(ctx context.Context, id int64) (*Account, error) {
	return c.get(ctx, "id:"+strconv.FormatInt(id, 10), func(ctx context.Context) (*Account, error) { return c.store.AccountByID(ctx, id) })
}

// ByName returns an account by name.
func (c *AccountCache) ByName(ctx context.Context, name string) (*Account, error) {
	return c.get(ctx, "name:"+name, func(ctx context.Context) (*Account, error) { return c.store.AccountByName(ctx, name) })
}

// Default returns a platform's default account.
func (c *AccountCache) Default(ctx context.Context, platform string) (*Account, error) {
	return c.get(ctx, "default:"+platform, func(ctx context.Context) (*Account, error) { return c.store.DefaultAccount(ctx, platform) })
}

// Forget drops every cached account, after a change the caller made itself.
func (c *AccountCache) Forget() {
	c.mu.Lock()
	c.generation++
	c.items = map[string]cachedAccount{}
	c.mu.Unlock()
}
