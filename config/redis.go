package config

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisTopology is how Herald's Redis is deployed.
type RedisTopology string

// The topologies HERALD_REDIS_URL can name.
const (
	// Standalone is one server: redis:// or rediss://.
	Standalone RedisTopology = "standalone"
	// Sentinel is a master and its replicas watched by Redis Sentinel:
	// redis+sentinel://[[user]:password@]host:port[,host:port…]/master-name[/db].
	Sentinel RedisTopology = "sentinel"
	// Cluster is a Redis Cluster: redis+cluster://[[user]:password@]host:port[,host:port…].
	Cluster RedisTopology = "cluster"
)

// Redis is HERALD_REDIS_URL parsed into plain values. The queue (tasks) turns it into
// the options of every Redis client Herald makes, so all of them follow the same
// server, Sentinel master or Cluster.
type Redis struct {
	Topology RedisTopology
	// Addrs are the server's address, the sentinels' or the cluster's seed nodes.
	Addrs              []string
	Username, Password string
	DB                 int
	// MasterName and the Sentinel credentials are set for Sentinel only.
	MasterName                         string
	SentinelUsername, SentinelPassword string
	// TLS is set for rediss://.
	TLS *tls.Config
	// The timeouts and the pool size a redis:// URL may set; zero for the client's
	// defaults.
	DialTimeout, ReadTimeout, WriteTimeout time.Duration
	PoolSize                               int
}

// Where names the servers r connects to, without credentials, for messages.
func (r *Redis) Where() string {
	where := strings.Join(r.Addrs, ",")
	if r.Topology == Sentinel {
		where += " (sentinel master " + r.MasterName + ")"
	}
	return where
}

// redisURLError prefixes the problems of a Redis URL; Load leaves it out, as its own
// error names the variable.
const redisURLError = "config: redis url: "

// ParseRedisURL parses a Redis URL of any topology. Errors name the part that is wrong.
func ParseRedisURL(raw string) (*Redis, error) {
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, fmt.Errorf(redisURLError + "no scheme (redis://, rediss://, redis+sentinel:// or redis+cluster://)")
	}
	switch scheme {
	case "redis", "rediss":
		o, err := redis.ParseURL(raw)
		if err != nil {
			return nil, fmt.Errorf(redisURLError+"%w", err)
		}
		return &Redis{Topology: Standalone, Addrs: []string{o.Addr}, Username: o.Username, Password: o.Password,
			DB: o.DB, TLS: o.TLSConfig, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout,
			WriteTimeout: o.WriteTimeout, PoolSize: o.PoolSize}, nil
	case "redis+sentinel":
		return parseMultiHost(raw, Sentinel, "26379")
	case "redis+cluster":
		return parseMultiHost(raw, Cluster, "6379")
	}
	return nil, fmt.Errorf(redisURLError+"unknown scheme %q (use redis://, rediss://, redis+sentinel:// or redis+cluster://)", scheme)
}

// parseMultiHost parses the sentinel and cluster forms, whose authority is a list of
// host:port that net/url cannot parse (it rejects an IPv6 literal inside a list).
func parseMultiHost(raw string, topo RedisTopology, defaultPort string) (*Redis, error) {
	scheme, rest, _ := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo, hosts := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	}
	u, err := url.Parse(scheme + "://" + userinfo + "hosts" + tail)
	if err != nil {
		return nil, fmt.Errorf(redisURLError+"%w", err)
	}
	r := &Redis{Topology: topo}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return nil, fmt.Errorf(redisURLError+"empty address in the host list %q", hosts)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = strings.Trim(h, "[]"), defaultPort
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil || host == "" {
			return nil, fmt.Errorf(redisURLError+"%q is not host:port", h)
		}
		r.Addrs = append(r.Addrs, net.JoinHostPort(host, port))
	}
	r.Username = u.User.Username()
	r.Password, _ = u.User.Password()
	path := strings.FieldsFunc(u.Path, func(r rune) bool { return r == '/' })
	q := u.Query()
	switch topo {
	case Sentinel:
		if len(path) == 0 || len(path) > 2 {
			return nil, fmt.Errorf(redisURLError + "a sentinel url names the master and optionally a database: redis+sentinel://host:26379,host:26379/master-name[/db]")
		}
		r.MasterName = path[0]
		if len(path) == 2 {
			if r.DB, err = strconv.Atoi(path[1]); err != nil || r.DB < 0 {
				return nil, fmt.Errorf(redisURLError+"database %q is not a number", path[1])
			}
		}
		r.SentinelUsername = q.Get("sentinel_username")
		r.SentinelPassword = q.Get("sentinel_password")
		q.Del("sentinel_username")
		q.Del("sentinel_password")
	case Cluster:
		if len(path) > 0 {
			return nil, fmt.Errorf(redisURLError + "a cluster url has no path: a cluster has only database 0")
		}
	}
	for k := range q {
		return nil, fmt.Errorf(redisURLError+"unknown parameter %q", k)
	}
	return r, nil
}
