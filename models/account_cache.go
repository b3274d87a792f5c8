package models

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// AccountCache keeps accounts for a few seconds, so a busy worker or API does not read
// and decrypt an account row for every message. An edit takes effect within the TTL.
type AccountCache struct {
	store *Store
	ttl   time.Duration

	mu    sync.Mutex
	items map[string]cachedAccount
}

type cachedAccount struct {
	at      time.Time
	account *Account
}

// NewAccountCache returns a cache over the store.
func (s *Store) NewAccountCache(ttl time.Duration) *AccountCache {
	return &AccountCache{store: s, ttl: ttl, items: map[string]cachedAccount{}}
}

func (c *AccountCache) get(key string, load func() (*Account, error)) (*Account, error) {
	c.mu.Lock()
	if it, ok := c.items[key]; ok && time.Since(it.at) < c.ttl {
		c.mu.Unlock()
		return it.account, nil
	}
	c.mu.Unlock()
	a, err := load()
	if err != nil {
		return nil, err
	}
	if a.Unreadable {
		// Nothing sends through an account whose credentials no key opens.
		return nil, fmt.Errorf("models: account %s: %w", a.Name, ErrUnreadable)
	}
	c.mu.Lock()
	c.items[key] = cachedAccount{at: time.Now(), account: a}
	c.mu.Unlock()
	return a, nil
}

// ByID returns an account by id.
func (c *AccountCache) ByID(ctx context.Context, id int64) (*Account, error) {
	return c.get("id:"+strconv.FormatInt(id, 10), func() (*Account, error) { return c.store.AccountByID(ctx, id) })
}

// ByName returns an account by name.
func (c *AccountCache) ByName(ctx context.Context, name string) (*Account, error) {
	return c.get("name:"+name, func() (*Account, error) { return c.store.AccountByName(ctx, name) })
}

// Default returns a platform's default account.
func (c *AccountCache) Default(ctx context.Context, platform string) (*Account, error) {
	return c.get("default:"+platform, func() (*Account, error) { return c.store.DefaultAccount(ctx, platform) })
}

// Forget drops every cached account, after a change the caller made itself.
func (c *AccountCache) Forget() {
	c.mu.Lock()
	c.items = map[string]cachedAccount{}
	c.mu.Unlock()
}
