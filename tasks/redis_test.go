package tasks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

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
