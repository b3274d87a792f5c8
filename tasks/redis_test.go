package tasks_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"herald/internal/testenv"
	"herald/tasks"
)

// The in-process Redis listens on a loopback port any local user can reach: it answers
// only clients that authenticate with its password.
func TestEmbeddedRedisRequiresPassword(t *testing.T) {
	t.Parallel()
	const password = "embedded-redis-test-password-0123456789"
	r, err := tasks.StartEmbeddedRedis(password)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	ctx := context.Background()

	stranger := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer stranger.Close()
	if err := stranger.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("SET without a password: %v, want NOAUTH", err)
	}
	guesser := redis.NewClient(&redis.Options{Addr: r.Addr(), Password: "guess"})
	defer guesser.Close()
	if err := guesser.Ping(ctx).Err(); err == nil {
		t.Error("PING with a wrong password succeeded")
	}

	if strings.Contains(r.Addr(), password) {
		t.Fatalf("Addr %q carries the password", r.Addr())
	}
	owner := redisClient(t, r.URL())
	if err := owner.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Errorf("SET through URL(): %v", err)
	}

	if _, err := tasks.StartEmbeddedRedis(""); err == nil {
		t.Error("StartEmbeddedRedis without a password succeeded")
	}
}

// miniredis remembers every key it has ever held (for WATCH); the embedded Redis must
// let it forget the ones that are gone, or a long-running install keeps every task it
// ever queued in memory. The keys that are still there stay, with their values.
func TestEmbeddedRedisForgetsDeletedKeys(t *testing.T) {
	t.Parallel()
	r, err := tasks.StartEmbeddedRedis("embedded-redis-test-password-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	ctx := context.Background()
	c := redisClient(t, r.URL())
	const gone, kept = 5000, 7
	p := c.Pipeline()
	for i := range gone {
		p.HSet(ctx, fmt.Sprintf("asynq:{normal}:t:%d", i), "msg", "x")
		p.Del(ctx, fmt.Sprintf("asynq:{normal}:t:%d", i))
		p.Set(ctx, fmt.Sprintf("expiring:%d", i), "x", time.Millisecond)
	}
	for i := range kept {
		p.Set(ctx, fmt.Sprintf("kept:%d", i), i, 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	// The expiring keys go once the embedded Redis's clock has passed them.
	testenv.WaitFor(t, 5*time.Second, "the expiring keys to expire", func() bool {
		n, _ := c.DBSize(ctx).Result()
		return n == kept
	})
	if n := r.ForgetDeleted(); n != kept {
		t.Errorf("miniredis remembers %d keys after forgetting the deleted ones, want the %d that are there", n, kept)
	}
	for i := range kept {
		if v, err := c.Get(ctx, fmt.Sprintf("kept:%d", i)).Int(); err != nil || v != i {
			t.Errorf("kept:%d = %d, %v after forgetting, want %d", i, v, err, i)
		}
	}
}
