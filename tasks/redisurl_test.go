package tasks_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"herald/internal/testenv"
	"herald/sending"
	"herald/tasks"
)

// Every client made from one URL, Asynq's included, is of the URL's topology.
func TestRedisClientsFollowTheTopology(t *testing.T) {
	for _, c := range []struct {
		url  string
		want string
	}{
		{"redis://127.0.0.1:6379/0", "*redis.Client"},
		{"redis+sentinel://127.0.0.1:26379/m", "*redis.Client"}, // go-redis's failover client is a *redis.Client
		{"redis+cluster://127.0.0.1:7000", "*redis.ClusterClient"},
	} {
		r, err := tasks.ParseRedisURL(c.url)
		if err != nil {
			t.Fatal(err)
		}
		limiter, asynqs := r.NewClient(5), r.Asynq().MakeRedisClient().(redis.UniversalClient)
		if got := fmt.Sprintf("%T/%T", limiter, asynqs); got != c.want+"/"+c.want {
			t.Errorf("%s: clients %s, want %s for both", c.url, got, c.want)
		}
		limiter.Close()
		asynqs.Close()
	}
}

// On a Cluster every key one limiter call touches must be in one slot: the account's
// log, the recipient's log and the waiting flags of every account and recipient used here
// are spread over the three masters, and each call still runs (no CROSSSLOT) and holds
// its limit.
func TestLimiterOnCluster(t *testing.T) {
	l := limiterOn(t, testenv.StartRedisCluster(t, 3).URL())
	ctx := context.Background()
	limits := sending.Limits{PerMinute: 3, PerRecipientPerMinute: 2}
	for account := int64(1); account <= 6; account++ {
		admitted := 0
		for i := range 5 {
			d, err := l.Acquire(ctx, account, limits, fmt.Sprintf("person-%d", i%2), "normal", fmt.Sprint(i))
			if err != nil {
				t.Fatalf("account %d call %d: %v", account, i, err)
			}
			if d.Allowed {
				admitted++
			}
		}
		if admitted != limits.PerMinute {
			t.Errorf("account %d: %d of 5 calls admitted, want the per-minute limit %d", account, admitted, limits.PerMinute)
		}
		usage, err := l.Usage(ctx, account, limits)
		if err != nil || len(usage) != 1 || usage[0].Used != limits.PerMinute {
			t.Errorf("account %d usage %+v %v, want %d used", account, usage, err, limits.PerMinute)
		}
	}
}
