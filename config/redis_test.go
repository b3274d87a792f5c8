package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/i18n"
)

// parsedRedis is the part of a parsed URL the tests compare.
type parsedRedis struct {
	Topology           RedisTopology
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
		want parsedRedis
	}{
		{"redis://127.0.0.1:6379/3", parsedRedis{Topology: Standalone, Addrs: []string{"127.0.0.1:6379"}, DB: 3}},
		{"rediss://:pw@db.internal/0", parsedRedis{Topology: Standalone, Addrs: []string{"db.internal:6379"}, Password: "pw", TLS: true}},
		{"redis+sentinel://10.0.0.1:26379,10.0.0.2:26380/mymaster",
			parsedRedis{Topology: Sentinel, Addrs: []string{"10.0.0.1:26379", "10.0.0.2:26380"}, MasterName: "mymaster"}},
		{"redis+sentinel://app:p%40ss@s1,[::1]:26390/mymaster/2?sentinel_password=sp",
			parsedRedis{Topology: Sentinel, Addrs: []string{"s1:26379", "[::1]:26390"}, MasterName: "mymaster", DB: 2,
				Username: "app", Password: "p@ss", SentinelPassword: "sp"}},
		{"redis+cluster://:pw@h1:7000,h2:7001,[fd00::3]:7002",
			parsedRedis{Topology: Cluster, Addrs: []string{"h1:7000", "h2:7001", "[fd00::3]:7002"}, Password: "pw"}},
		{"redis+cluster://h1", parsedRedis{Topology: Cluster, Addrs: []string{"h1:6379"}}},
	} {
		r, err := ParseRedisURL(c.url)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		got := parsedRedis{Topology: r.Topology, Addrs: r.Addrs, MasterName: r.MasterName, DB: r.DB, Username: r.Username,
			Password: r.Password, SentinelPassword: r.SentinelPassword, TLS: r.TLS != nil}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.url, diff)
		}
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
		_, err := ParseRedisURL(c.url)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: error %v, want one saying %q", c.url, err, c.says)
		}
	}
}

// The languages configuration accepts are the catalogs' languages, the default first.
func TestLanguagesAreTheCatalogs(t *testing.T) {
	if !slices.Equal(Languages, i18n.Languages) || Languages[0] != i18n.Chinese {
		t.Errorf("config.Languages %v, i18n.Languages %v (default %s): keep them alike", Languages, i18n.Languages, i18n.Chinese)
	}
}
