package sending

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAccountCacheConcurrentMissesShareOneRead: when an account is not cached, requests
// that arrive while it is being read wait for that read instead of each reading it; a
// Forget during the read keeps it out of the cache.
func TestAccountCacheConcurrentMissesShareOneRead(t *testing.T) {
	c := &AccountCache{ttl: time.Minute, items: map[string]cachedAccount{}}
	var reads atomic.Int64
	release := make(chan struct{})
	load := func(context.Context) (*Account, error) {
		reads.Add(1)
		<-release
		return &Account{Name: "ty"}, nil
	}
	var wg sync.WaitGroup
	got := make([]*Account, 50)
	for i := range got {
		wg.Go(func() {
			a, err := c.get(context.Background(), "name:ty", load)
			if err != nil {
				t.Error(err)
			}
			got[i] = a
		})
	}
	for reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the others arrive while the read is held
	close(release)
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Errorf("50 concurrent misses read the account %d times, want once", n)
	}
	for _, a := range got {
		if a == nil || a.Name != "ty" {
			t.Fatalf("a request got %+v", a)
		}
	}
	if _, err := c.get(context.Background(), "name:ty", load); err != nil || reads.Load() != 1 {
		t.Errorf("a cached account was read again (%d reads, %v)", reads.Load(), err)
	}

	// A read begun before a Forget is not kept.
	slow := make(chan struct{})
	started := make(chan struct{})
	go func() {
		_, _ = c.get(context.Background(), "name:other", func(context.Context) (*Account, error) {
			close(started)
			<-slow
			return &Account{Name: "other, as it was"}, nil
		})
	}()
	<-started
	c.Forget()
	close(slow)
	a, err := c.get(context.Background(), "name:other", func(context.Context) (*Account, error) { return &Account{Name: "other, edited"}, nil })
	if err != nil || a.Name != "other, edited" {
		t.Errorf("after Forget the cache answered %+v (%v), want the account read again", a, err)
	}
}
