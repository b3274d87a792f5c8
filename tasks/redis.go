package tasks

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// EmbeddedRedis is an in-process Redis for the single-node default install. It keeps
// nothing on disk; that is safe because MySQL (here SQLite) is the source of truth and
// the sweeper re-enqueues whatever Redis lost.
type EmbeddedRedis struct {
	mr       *miniredis.Miniredis
	password string
	stop     chan struct{}
}

// StartEmbeddedRedis starts an in-process Redis on a loopback port. Every connection
// must authenticate with password first: anyone on the machine can reach the port, and
// the queues decide what gets sent.
func StartEmbeddedRedis(password string) (*EmbeddedRedis, error) {
	if password == "" {
		return nil, errors.New("tasks: start in-process redis: no password")
	}
	mr := miniredis.NewMiniRedis()
	mr.RequireAuth(password)
	if err := mr.Start(); err != nil {
		return nil, fmt.Errorf("tasks: start in-process redis: %w", err)
	}
	e := &EmbeddedRedis{mr: mr, password: password, stop: make(chan struct{})}
	go e.tick()
	return e, nil
}

// tick advances miniredis's clock with the wall clock: it never expires keys on its own,
// and Asynq's leases, locks and heartbeats depend on expiry.
func (e *EmbeddedRedis) tick() {
	const every = 100 * time.Millisecond
	t := time.NewTicker(every)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-e.stop:
			return
		case now := <-t.C:
			e.mr.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Addr is the host:port the embedded Redis listens on.
func (e *EmbeddedRedis) Addr() string { return e.mr.Addr() }

// URL is a redis:// URL for the embedded Redis, with its password.
func (e *EmbeddedRedis) URL() string {
	return (&url.URL{Scheme: "redis", User: url.UserPassword("", e.password), Host: e.mr.Addr(), Path: "/0"}).String()
}

// FlushAll empties the embedded Redis, as a restart without persistence would.
func (e *EmbeddedRedis) FlushAll() { e.mr.FlushAll() }

// Close stops the embedded Redis.
func (e *EmbeddedRedis) Close() {
	close(e.stop)
	e.mr.Close()
}
