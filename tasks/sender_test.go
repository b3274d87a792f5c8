package tasks_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"herald/channels"
	"herald/models"
	"herald/tasks"
)

// newTestSender builds a sender on the test Redis with what cfg leaves out: the store,
// an empty channel registry, an enqueuer, a limiter, UTC and a silent log.
func newTestSender(t *testing.T, store *models.Store, red *tasks.Redis, cfg tasks.SenderConfig) *tasks.Sender {
	t.Helper()
	cfg.Store = store
	if cfg.Channels == nil {
		cfg.Channels = channels.NewRegistry(nil)
	}
	if cfg.Enqueuer == nil {
		enq := tasks.NewEnqueuer(red.Asynq())
		t.Cleanup(func() { enq.Close() })
		cfg.Enqueuer = enq
	}
	if cfg.Limiter == nil {
		l, err := tasks.NewLimiter(tasks.LimiterConfig{Redis: red})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Limiter = l
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := tasks.NewSender(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// A sender cannot be built without one of its required parts; above all, not without
// its limiter, which would send past the limits a platform enforces by dropping.
func TestNewSenderRequiresItsParts(t *testing.T) {
	t.Parallel()
	store, red := storeAndRedis(t)
	enq := tasks.NewEnqueuer(red.Asynq())
	t.Cleanup(func() { enq.Close() })
	limiter, err := tasks.NewLimiter(tasks.LimiterConfig{Redis: red})
	if err != nil {
		t.Fatal(err)
	}
	full := func() tasks.SenderConfig {
		return tasks.SenderConfig{Store: store, Channels: channels.NewRegistry(nil), Enqueuer: enq, Limiter: limiter, Location: time.UTC}
	}
	for _, tt := range []struct {
		missing string
		drop    func(*tasks.SenderConfig)
	}{
		{"store", func(c *tasks.SenderConfig) { c.Store = nil }},
		{"channel registry", func(c *tasks.SenderConfig) { c.Channels = nil }},
		{"enqueuer", func(c *tasks.SenderConfig) { c.Enqueuer = nil }},
		{"rate limiter", func(c *tasks.SenderConfig) { c.Limiter = nil }},
		{"time zone", func(c *tasks.SenderConfig) { c.Location = nil }},
	} {
		cfg := full()
		tt.drop(&cfg)
		s, err := tasks.NewSender(cfg)
		if err == nil || !strings.Contains(err.Error(), tt.missing) {
			t.Errorf("without its %s: sender %v, error %v; want an error naming it", tt.missing, s != nil, err)
		}
	}
	s, err := tasks.NewSender(full())
	if err != nil {
		t.Fatalf("with every required part: %v", err)
	}
	s.Close()
	if _, err := tasks.NewLimiter(tasks.LimiterConfig{}); err == nil {
		t.Error("a limiter without its Redis was built")
	}
	if _, err := tasks.NewSweeper(tasks.SweeperConfig{Store: store, Enqueuer: enq}); err == nil || !strings.Contains(err.Error(), "inspector") {
		t.Errorf("a sweeper without an inspector: %v, want an error naming it", err)
	}
}

// newTestSweeper builds a sweeper that logs nothing unless cfg says where.
func newTestSweeper(t *testing.T, cfg tasks.SweeperConfig) *tasks.Sweeper {
	t.Helper()
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := tasks.NewSweeper(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// redisClient connects to the Redis at url until the test ends.
func redisClient(t testing.TB, url string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}
