package tasks

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// An idle worker polls slowly (Worker) and its forwarder sleeps until the next
// scheduled job is due (Forwarder), so an idle Herald costs next to nothing. What
// makes them quick again is a wake-up: every enqueue rings a bell in its own process
// and publishes on a Redis channel, which each worker process listens to and rings its
// bell from. A wake-up is a hint, never the only way work is found: should one be lost
// (Redis dropped the publish, a subscriber was reconnecting), the slow poll finds the
// task within a second or so and wakes the worker itself.

// wakeChannel is the Redis channel wake-ups are published on, one per database number
// (a channel is seen from every database of a Redis). Its message says what arrived: a
// task to run now (wakeQueued) or a job added to the schedule (wakeScheduled).
func wakeChannel(rdb redis.UniversalClient) string {
	db := 0
	if c, ok := rdb.(*redis.Client); ok {
		db = c.Options().DB
	}
	return "herald:wake:" + strconv.Itoa(db)
}

const (
	wakeQueued    = "q"
	wakeScheduled = "s"
)

// Wake-ups are coalesced: a bell rung within ringEvery of its last ring, or a publish
// within publishEvery of the last, is left out. That loses nothing: a ring or publish
// let through wakes the worker for its whole quiet period (Worker.IdleAfter), which is
// far longer.
const (
	ringEvery    = 5 * time.Millisecond
	publishEvery = 50 * time.Millisecond
)

// bell wakes whoever waits on it: each ring closes the channel the waiters hold.
type bell struct {
	mu   sync.Mutex
	ch   chan struct{}
	last atomic.Int64 // unix ns of the last ring
}

func newBell() *bell { return &bell{ch: make(chan struct{})} }

// wait returns a channel closed by the next ring.
func (b *bell) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

// ring wakes the waiters, unless it rang within ringEvery.
func (b *bell) ring() {
	now := time.Now().UnixNano()
	if last := b.last.Load(); now-last < int64(ringEvery) || !b.last.CompareAndSwap(last, now) {
		return
	}
	b.mu.Lock()
	close(b.ch)
	b.ch = make(chan struct{})
	b.mu.Unlock()
}

// wakes are a process's two bells and its side of the wake channel.
type wakes struct {
	rdb       redis.UniversalClient
	channel   string
	queued    *bell
	scheduled *bell
	published [2]atomic.Int64 // unix ns of the last publish of each kind
	// drop leaves out every publish: for the test that a lost wake-up loses no task.
	drop atomic.Bool
}

func newWakes(rdb redis.UniversalClient) *wakes {
	return &wakes{rdb: rdb, channel: wakeChannel(rdb), queued: newBell(), scheduled: newBell()}
}

// tell rings the bell of kind in this process and publishes it to the others.
func (w *wakes) tell(ctx context.Context, kind string) {
	b, p := w.queued, &w.published[0]
	if kind == wakeScheduled {
		b, p = w.scheduled, &w.published[1]
	}
	b.ring()
	now := time.Now().UnixNano()
	if last := p.Load(); now-last < int64(publishEvery) || !p.CompareAndSwap(last, now) || w.drop.Load() {
		return
	}
	// A publish that fails is a wake-up lost, which the slow poll makes good.
	_ = w.rdb.Publish(context.WithoutCancel(ctx), w.channel, kind).Err()
}

// listen subscribes to the wake channel and rings this process's bells for the
// wake-ups other processes publish, in the background until ctx ends. It returns once
// the subscription is in place (or has failed; it is tried again in the background),
// so that a wake-up published after it is heard. The subscription reconnects by itself
// after Redis comes back.
func (w *wakes) listen(ctx context.Context) {
	sub := w.rdb.Subscribe(ctx, w.channel)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, _ = sub.Receive(rctx) // the subscription's confirmation
	cancel()
	go func() {
		defer sub.Close()
		ch := sub.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				if m.Payload == wakeScheduled {
					w.scheduled.ring()
				} else {
					w.queued.ring()
				}
			}
		}
	}()
}
