package tasks_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"herald/internal/testenv"
	"herald/models"
	"herald/tasks"
)

// parsed is the part of a parsed URL the tests compare.
type parsed struct {
	Topology           tasks.Topology
	Addrs              []string
	MasterName         string
	DB                 int
	Username, Password string
	SentinelPassword   string
	TLS                bool
}

func TestParseRedisURL(t *testing.T) {
	for _, c := range []struct {
		url  string
		want parsed
	}{
		{"redis://127.0.0.1:6379/3", parsed{Topology: tasks.Standalone, Addrs: []string{"127.0.0.1:6379"}, DB: 3}},
		{"rediss://:pw@db.internal/0", parsed{Topology: tasks.Standalone, Addrs: []string{"db.internal:6379"}, Password: "pw", TLS: true}},
		{"redis+sentinel://10.0.0.1:26379,10.0.0.2:26380/mymaster",
			parsed{Topology: tasks.Sentinel, Addrs: []string{"10.0.0.1:26379", "10.0.0.2:26380"}, MasterName: "mymaster"}},
		{"redis+sentinel://app:p%40ss@s1,[::1]:26390/mymaster/2?sentinel_password=sp",
			parsed{Topology: tasks.Sentinel, Addrs: []string{"s1:26379", "[::1]:26390"}, MasterName: "mymaster", DB: 2,
				Username: "app", Password: "p@ss", SentinelPassword: "sp"}},
		{"redis+cluster://:pw@h1:7000,h2:7001,[fd00::3]:7002",
			parsed{Topology: tasks.Cluster, Addrs: []string{"h1:7000", "h2:7001", "[fd00::3]:7002"}, Password: "pw"}},
		{"redis+cluster://h1", parsed{Topology: tasks.Cluster, Addrs: []string{"h1:6379"}}},
	} {
		r, err := tasks.ParseRedisURL(c.url)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		o := r.Options()
		got := parsed{Topology: r.Topology, Addrs: o.Addrs, MasterName: o.MasterName, DB: o.DB, Username: o.Username,
			Password: o.Password, SentinelPassword: o.SentinelPassword, TLS: o.TLSConfig != nil}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.url, diff)
		}
	}
}

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

func TestParseRedisURLRejects(t *testing.T) {
	for _, c := range []struct{ url, says string }{
		{"127.0.0.1:6379", "no scheme"},
		{"http://x", `unknown scheme "http"`},
		{"redis-sentinel://h:26379?master=m", `unknown scheme "redis-sentinel"`},
		{"redis+sentinel://h:26379", "names the master"},
		{"redis+sentinel://h:26379/m/x", `database "x" is not a number`},
		{"redis+sentinel://h:26379,,h2/m", "empty address"},
		{"redis+sentinel://h:port/m", `"h:port" is not host:port`},
		{"redis+cluster://h:7000/1", "only database 0"},
		{"redis+cluster://h:7000?pool=5", `unknown parameter "pool"`},
	} {
		_, err := tasks.ParseRedisURL(c.url)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: error %v, want one saying %q", c.url, err, c.says)
		}
	}
}

// On a Cluster every key one limiter call touches must be in one slot: the account's
// log, the recipient's log and the waiting flags of every account and recipient used here
// are spread over the three masters, and each call still runs (no CROSSSLOT) and holds
// its limit.
func TestLimiterOnCluster(t *testing.T) {
	l := limiterOn(t, testenv.StartRedisCluster(t, 3).URL())
	ctx := context.Background()
	limits := models.Limits{PerMinute: 3, PerRecipientPerMinute: 2}
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
