package access_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"herald/access"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
)

// newKey creates an API key with the send scope and returns it with its secret.
func newKey(t *testing.T, s *models.Store) (*access.APIKey, string) {
	t.Helper()
	k, secret, err := s.Access().CreateAPIKey(context.Background(), "erp", access.ScopeSend, "admin")
	if err != nil {
		t.Fatal(err)
	}
	return k, secret
}

// setRevokedBehindCache changes a key's revocation in the database without going
// through the store's RevokeAPIKey, as another process would.
func setRevokedBehindCache(t *testing.T, s *models.Store, id int64, revoked bool) {
	t.Helper()
	var at any
	if revoked {
		at = kernel.Now()
	}
	if _, err := s.SQL().Exec("UPDATE api_keys SET revoked_at = ? WHERE id = ?", at, id); err != nil {
		t.Fatal(err)
	}
}

// wantAccepted fails the test unless the cache accepts secret as key id.
func wantAccepted(t *testing.T, what string, c *access.APIKeyCache, secret string, id int64) {
	t.Helper()
	k, err := c.Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatalf("%s: %v, want key %d", what, err, id)
	}
	if k.ID != id {
		t.Fatalf("%s: key %d, want %d", what, k.ID, id)
	}
}

// wantRefused fails the test unless the cache refuses secret as unknown or revoked.
func wantRefused(t *testing.T, what string, c *access.APIKeyCache, secret string) {
	t.Helper()
	if k, err := c.Authenticate(context.Background(), secret); !errors.Is(err, kernel.ErrNotFound) {
		t.Fatalf("%s: key %+v, error %v; want ErrNotFound", what, k, err)
	}
}

func TestAPIKeyCacheServesWithinTTL(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	k, secret := newKey(t, s)
	clock := testenv.NewStepClock()
	cache := s.Access().NewAPIKeyCache(clock.Now)

	wantAccepted(t, "first use", cache, secret, k.ID)
	// Revoked in the database behind the cache's back: only a read would see it.
	setRevokedBehindCache(t, s, k.ID, true)
	wantAccepted(t, "at once", cache, secret, k.ID)
	clock.Advance(access.APIKeyCacheTTL - time.Millisecond)
	wantAccepted(t, "just before the TTL", cache, secret, k.ID)
	clock.Advance(time.Millisecond)
	wantRefused(t, "once the TTL passed", cache, secret)
}

func TestAPIKeyCacheRevokedHereIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := testenv.Store(t)
	k, secret := newKey(t, s)
	other, otherSecret := newKey(t, s)
	clock := testenv.NewStepClock()
	// Two caches on one store, as one process with two HTTP handlers has.
	caches := []*access.APIKeyCache{s.Access().NewAPIKeyCache(clock.Now), s.Access().NewAPIKeyCache(clock.Now)}
	for i, c := range caches {
		wantAccepted(t, fmt.Sprintf("cache %d before", i), c, secret, k.ID)
		wantAccepted(t, fmt.Sprintf("cache %d, other key before", i), c, otherSecret, other.ID)
	}

	if err := s.Access().RevokeAPIKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	for i, c := range caches {
		wantRefused(t, fmt.Sprintf("cache %d after the revocation", i), c, secret)
		wantAccepted(t, fmt.Sprintf("cache %d, other key after", i), c, otherSecret, other.ID)
	}
	if err := s.Access().RevokeAPIKey(ctx, k.ID); !errors.Is(err, kernel.ErrStateChanged) {
		t.Errorf("revoking twice: %v, want ErrStateChanged", err)
	}
}

func TestAPIKeyCacheRevokedElsewhereIsRefusedWithinTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	here, there := testenv.TwoProcesses(t)

	k, secret := newKey(t, here)
	hereClock, thereClock := testenv.NewStepClock(), testenv.NewStepClock()
	hereCache, thereCache := here.Access().NewAPIKeyCache(hereClock.Now), there.Access().NewAPIKeyCache(thereClock.Now)
	wantAccepted(t, "here before", hereCache, secret, k.ID)
	wantAccepted(t, "there before", thereCache, secret, k.ID)

	if err := here.Access().RevokeAPIKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, "here after the revocation", hereCache, secret)
	thereClock.Advance(access.APIKeyCacheTTL / 2)
	wantAccepted(t, "there, within the TTL", thereCache, secret, k.ID)
	thereClock.Advance(access.APIKeyCacheTTL / 2)
	wantRefused(t, "there, once the TTL passed", thereCache, secret)
}

func TestAPIKeyCacheKeepsNoRefusal(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	k, secret := newKey(t, s)
	cache := s.Access().NewAPIKeyCache(testenv.NewStepClock().Now)

	for _, tt := range []struct{ name, secret string }{
		{"empty", ""},
		{"not shaped like a key", "Bearer token"},
		{"unknown prefix", "hk_000000000000_" + secret[len(secret)-48:]},
		{"known prefix, wrong secret", secret[:len(secret)-1] + "x"},
	} {
		wantRefused(t, tt.name, cache, tt.secret)
	}

	// A refusal is not remembered: once the database accepts the key again, so does
	// the cache, without its clock moving.
	setRevokedBehindCache(t, s, k.ID, true)
	wantRefused(t, "revoked", cache, secret)
	setRevokedBehindCache(t, s, k.ID, false)
	wantAccepted(t, "restored", cache, secret, k.ID)
}

// gatedLookup counts reads of the store and holds each answer until the gate opens.
type gatedLookup struct {
	store *models.Store
	gate  chan struct{}
	reads atomic.Int32
}

func (g *gatedLookup) lookup(ctx context.Context, secret string) (*access.APIKey, error) {
	k, err := g.store.Access().AuthenticateAPIKey(ctx, secret)
	g.reads.Add(1) // counted once the database answered: waitForRead then knows what it saw
	select {
	case <-g.gate:
		return k, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// waitForRead waits until a read has read the database and is held at the gate.
func (g *gatedLookup) waitForRead(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); g.reads.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no read began")
		}
	}
}

func TestAPIKeyCacheConcurrentMissesShareOneRead(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	k, secret := newKey(t, s)
	g := &gatedLookup{store: s, gate: make(chan struct{})}
	cache := access.NewAPIKeyCache(g.lookup, testenv.NewStepClock().Now)

	const requests = 20
	var wg sync.WaitGroup
	ids := make([]int64, requests)
	errs := make([]error, requests)
	for i := range requests {
		wg.Go(func() {
			got, err := cache.Authenticate(context.Background(), secret)
			errs[i] = err
			if err == nil {
				ids[i] = got.ID
			}
		})
	}
	g.waitForRead(t)
	// Give every request time to reach the read in flight before it ends.
	time.Sleep(100 * time.Millisecond)
	close(g.gate)
	wg.Wait()

	for i := range requests {
		if errs[i] != nil || ids[i] != k.ID {
			t.Errorf("request %d: key %d, error %v; want key %d", i, ids[i], errs[i], k.ID)
		}
	}
	if n := g.reads.Load(); n != 1 {
		t.Errorf("%d concurrent misses made %d reads, want 1", requests, n)
	}
}

func TestAPIKeyCacheReadOutlivesTheRequestThatBeganIt(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	k, secret := newKey(t, s)
	g := &gatedLookup{store: s, gate: make(chan struct{})}
	cache := access.NewAPIKeyCache(g.lookup, testenv.NewStepClock().Now)

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := cache.Authenticate(ctx, secret)
		first <- err
	}()
	g.waitForRead(t)
	second := make(chan error, 1)
	go func() {
		got, err := cache.Authenticate(context.Background(), secret)
		if err == nil && got.ID != k.ID {
			err = fmt.Errorf("key %d, want %d", got.ID, k.ID)
		}
		second <- err
	}()
	time.Sleep(100 * time.Millisecond) // the second request joins the read

	// The request that began the read gives up; the read goes on for the other.
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Errorf("the request that gave up: %v, want context.Canceled", err)
	}
	close(g.gate)
	if err := <-second; err != nil {
		t.Errorf("the request that joined: %v", err)
	}
	if n := g.reads.Load(); n != 1 {
		t.Errorf("%d reads, want 1", n)
	}
}

func TestAPIKeyCacheKeepsNoReadBegunBeforeARevocation(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	k, secret := newKey(t, s)
	g := &gatedLookup{store: s, gate: make(chan struct{})}
	cache := access.NewAPIKeyCache(g.lookup, testenv.NewStepClock().Now)

	before := make(chan error, 1)
	go func() {
		_, err := cache.Authenticate(context.Background(), secret)
		before <- err
	}()
	g.waitForRead(t) // the read saw the key live
	// The key is revoked in this process, as RevokeAPIKey does, while the read is out.
	setRevokedBehindCache(t, s, k.ID, true)
	cache.Forget()
	after := make(chan error, 1)
	go func() {
		_, err := cache.Authenticate(context.Background(), secret)
		after <- err
	}()
	time.Sleep(100 * time.Millisecond) // the later request must not join the earlier read
	close(g.gate)

	if err := <-before; err != nil {
		t.Errorf("the request begun before the revocation: %v, want the key", err)
	}
	if err := <-after; !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("a request after the revocation: %v, want ErrNotFound", err)
	}
	wantRefused(t, "later, on the same clock", cache, secret)
}

func TestAPIKeyCacheIsBounded(t *testing.T) {
	t.Parallel()
	// Keys accepted without a database, so that the cache can be filled quickly.
	var reads atomic.Int32
	lookup := func(_ context.Context, secret string) (*access.APIKey, error) {
		return &access.APIKey{ID: int64(reads.Add(1)), Prefix: access.APIKeyPrefix(secret)}, nil
	}
	cache := access.NewAPIKeyCache(lookup, testenv.NewStepClock().Now)
	secret := func(i int) string { return fmt.Sprintf("hk_%012x_%048x", i, i) }

	const size = 10_000 // apiKeyCacheSize
	for i := range size {
		if _, err := cache.Authenticate(context.Background(), secret(i)); err != nil {
			t.Fatal(err)
		}
	}
	use := func(i int) int32 {
		before := reads.Load()
		if _, err := cache.Authenticate(context.Background(), secret(i)); err != nil {
			t.Fatal(err)
		}
		return reads.Load() - before
	}
	if n := use(0); n != 0 {
		t.Fatalf("a full cache read its first key again (%d reads), want it kept", n)
	}
	if n := use(size); n != 1 {
		t.Fatalf("a key beyond the bound: %d reads, want 1", n)
	}
	// Nothing had expired, so the cache started over to make room.
	if n := use(0); n != 1 {
		t.Errorf("the first key after the cache passed its bound: %d reads, want 1", n)
	}
}
