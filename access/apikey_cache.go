package access

import (
	"context"
	"crypto/sha256"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"herald/kernel"
)

// APIKeyCacheTTL is how long a cached key is trusted before the database is asked again.
// MySQL is the only place every web process sees a revocation (Redis may be gone), so
// this bounds how long another process keeps accepting a key revoked elsewhere; one
// second costs one read a second per busy key, instead of one read per request.
const APIKeyCacheTTL = time.Second

// apiKeyCacheSize bounds the cache. Only keys the database accepted are kept, so wrong
// keys sent at any rate take no room. Expired entries stay until the cache is full;
// then they go, or everything does when none has expired.
const apiKeyCacheSize = 10_000

// APIKeyLookup answers as Credentials.AuthenticateAPIKey does: the live key a secret belongs
// to, ErrNotFound, or another error when the database did not answer.
type APIKeyLookup func(ctx context.Context, secret string) (*APIKey, error)

// APIKeyCache keeps keys the database accepted for APIKeyCacheTTL, so the API
// authenticates most requests without a database read. Entries are found by the
// SHA-256 of the presented secret: the cache never holds a secret. Refusals are not
// kept, and concurrent misses for one secret share a single read.
type APIKeyCache struct {
	lookup APIKeyLookup
	now    func() time.Time
	reads  singleflight.Group

	mu sync.Mutex
	// generation counts Forget calls: a read begun before one does not fill the cache,
	// and a request after one does not join a read begun before it.
	generation uint64
	items      map[[sha256.Size]byte]cachedAPIKey
}

type cachedAPIKey struct {
	key     *APIKey
	expires time.Time
}

// NewAPIKeyCache returns an empty cache in front of lookup; now is its clock (time.Now
// outside tests). Only time clears it: use Credentials.NewAPIKeyCache for a cache that the
// store's revocations clear.
func NewAPIKeyCache(lookup APIKeyLookup, now func() time.Time) *APIKeyCache {
	return &APIKeyCache{lookup: lookup, now: now, items: map[[sha256.Size]byte]cachedAPIKey{}}
}

// NewAPIKeyCache returns a cache of the keys s authenticates, on the clock now. A key
// revoked through s is refused by the cache at once; one revoked by another process,
// within APIKeyCacheTTL.
func (s *Credentials) NewAPIKeyCache(now func() time.Time) *APIKeyCache {
	c := NewAPIKeyCache(s.AuthenticateAPIKey, now)
	s.apiKeyCaches.Lock()
	s.apiKeyCaches.list = append(s.apiKeyCaches.list, c)
	s.apiKeyCaches.Unlock()
	return c
}

// forgetAPIKeys clears every cache made on s, after s revoked a key.
func (s *Credentials) forgetAPIKeys() {
	s.apiKeyCaches.Lock()
	caches := s.apiKeyCaches.list
	s.apiKeyCaches.Unlock()
	for _, c := range caches {
		c.Forget()
	}
}

// Authenticate returns the live key a secret belongs to, or ErrNotFound, from the cache
// when it holds the secret, else from the database. It gives up when ctx ends, even
// while a read it joined goes on for other requests.
func (c *APIKeyCache) Authenticate(ctx context.Context, secret string) (*APIKey, error) {
	if APIKeyPrefix(secret) == "" {
		return nil, kernel.ErrNotFound // not shaped like a key: the database cannot know it
	}
	sum := sha256.Sum256([]byte(secret))
	c.mu.Lock()
	it, ok := c.items[sum]
	generation := c.generation
	c.mu.Unlock()
	if ok && c.now().Before(it.expires) {
		k := *it.key
		return &k, nil
	}
	flight := string(sum[:]) + strconv.FormatUint(generation, 10)
	res := c.reads.DoChan(flight, func() (any, error) { return c.read(ctx, sum, secret, generation) })
	select {
	case r := <-res:
		if r.Err != nil {
			return nil, r.Err
		}
		k := *r.Val.(*APIKey)
		return &k, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read asks the database about a secret and keeps the key if it is accepted.
func (c *APIKeyCache) read(ctx context.Context, sum [sha256.Size]byte, secret string, generation uint64) (*APIKey, error) {
	readCtx, cancel := kernel.SharedRead(ctx)
	defer cancel()
	// The entry expires counting from before the read, so a slow read cannot stretch
	// the time a revoked key is still accepted.
	started := c.now()
	k, err := c.lookup(readCtx, secret)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.generation != generation {
		return k, nil
	}
	if len(c.items) >= apiKeyCacheSize {
		c.dropExpired(c.now())
	}
	if len(c.items) >= apiKeyCacheSize {
		clear(c.items)
	}
	c.items[sum] = cachedAPIKey{key: k, expires: started.Add(APIKeyCacheTTL)}
	return k, nil
}

// dropExpired removes entries past their time; c.mu is held.
func (c *APIKeyCache) dropExpired(now time.Time) {
	for sum, it := range c.items {
		if !now.Before(it.expires) {
			delete(c.items, sum)
		}
	}
}

// Forget drops every cached key, after a revocation made in this process.
func (c *APIKeyCache) Forget() {
	c.mu.Lock()
	c.generation++
	clear(c.items)
	c.mu.Unlock()
}

// apiKeyCacheList is the caches made on a store; a store bound to a transaction (InTx)
// shares its parent's list.
type apiKeyCacheList struct {
	sync.Mutex
	list []*APIKeyCache
}
