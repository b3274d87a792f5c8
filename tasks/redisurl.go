package tasks

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// Topology is how Herald's Redis is deployed.
type Topology string

// The topologies HERALD_REDIS_URL can name.
const (
	// Standalone is one server: redis:// or rediss://.
	Standalone Topology = "standalone"
	// Sentinel is a master and its replicas watched by Redis Sentinel:
	// redis+sentinel://[[user]:password@]host:port[,host:port…]/master-name[/db].
	Sentinel Topology = "sentinel"
	// Cluster is a Redis Cluster: redis+cluster://[[user]:password@]host:port[,host:port…].
	Cluster Topology = "cluster"
)

// Redis is HERALD_REDIS_URL parsed once. Every part of Herald that talks to Redis (Asynq's
// client, server, scheduler and inspector, Asynqmon, the rate limiter) connects through
// it, so all of them follow the same server, Sentinel master or Cluster.
type Redis struct {
	Topology Topology
	opt      redis.UniversalOptions
}

// Where names the servers r connects to, without credentials, for messages.
func (r *Redis) Where() string {
	where := strings.Join(r.opt.Addrs, ",")
	if r.Topology == Sentinel {
		where += " (sentinel master " + r.opt.MasterName + ")"
	}
	return where
}

// ParseRedisURL parses a Redis URL of any topology. Errors name the part that is wrong.
func ParseRedisURL(raw string) (*Redis, error) {
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, fmt.Errorf("tasks: redis url: no scheme (redis://, rediss://, redis+sentinel:// or redis+cluster://)")
	}
	switch scheme {
	case "redis", "rediss":
		o, err := redis.ParseURL(raw)
		if err != nil {
			return nil, fmt.Errorf("tasks: redis url: %w", err)
		}
		return &Redis{Topology: Standalone, opt: redis.UniversalOptions{
			Addrs: []string{o.Addr}, Username: o.Username, Password: o.Password,
			DB: o.DB, TLSConfig: o.TLSConfig, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout,
			WriteTimeout: o.WriteTimeout, PoolSize: o.PoolSize,
		}}, nil
	case "redis+sentinel":
		return parseMultiHost(raw, Sentinel, "26379")
	case "redis+cluster":
		return parseMultiHost(raw, Cluster, "6379")
	}
	return nil, fmt.Errorf("tasks: redis url: unknown scheme %q (use redis://, rediss://, redis+sentinel:// or redis+cluster://)", scheme)
}

// parseMultiHost parses the sentinel and cluster forms, whose authority is a list of
// host:port that net/url cannot parse (it rejects an IPv6 literal inside a list).
func parseMultiHost(raw string, topo Topology, defaultPort string) (*Redis, error) {
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
		return nil, fmt.Errorf("tasks: redis url: %w", err)
	}
	opt := redis.UniversalOptions{}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return nil, fmt.Errorf("tasks: redis url: empty address in the host list %q", hosts)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = strings.Trim(h, "[]"), defaultPort
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil || host == "" {
			return nil, fmt.Errorf("tasks: redis url: %q is not host:port", h)
		}
		opt.Addrs = append(opt.Addrs, net.JoinHostPort(host, port))
	}
	opt.Username = u.User.Username()
	opt.Password, _ = u.User.Password()
	path := strings.FieldsFunc(u.Path, func(r rune) bool { return r == '/' })
	q := u.Query()
	switch topo {
	case Sentinel:
		if len(path) == 0 || len(path) > 2 {
			return nil, fmt.Errorf("tasks: redis url: a sentinel url names the master and optionally a database: redis+sentinel://host:26379,host:26379/master-name[/db]")
		}
		opt.MasterName = path[0]
		if len(path) == 2 {
			if opt.DB, err = strconv.Atoi(path[1]); err != nil || opt.DB < 0 {
				return nil, fmt.Errorf("tasks: redis url: database %q is not a number", path[1])
			}
		}
		opt.SentinelUsername = q.Get("sentinel_username")
		opt.SentinelPassword = q.Get("sentinel_password")
		q.Del("sentinel_username")
		q.Del("sentinel_password")
	case Cluster:
		if len(path) > 0 {
			return nil, fmt.Errorf("tasks: redis url: a cluster url has no path: a cluster has only database 0")
		}
		opt.IsClusterMode = true
	}
	if len(q) > 0 {
		for k := range q {
			return nil, fmt.Errorf("tasks: redis url: unknown parameter %q", k)
		}
	}
	return &Redis{Topology: topo, opt: opt}, nil
}

// Asynq is the connection option for Asynq's client, server, scheduler and inspector
// and for Asynqmon. Its clients are made by NewClient, so they follow failovers as the
// limiter's does (Asynq's own option types leave a Cluster client's view of the slots
// a minute stale after a master dies).
func (r *Redis) Asynq() asynq.RedisConnOpt { return asynqConn{r} }

// asynqConn makes Asynq's Redis clients with NewClient.
type asynqConn struct{ r *Redis }

// MakeRedisClient implements asynq.RedisConnOpt.
func (c asynqConn) MakeRedisClient() any { return c.r.NewClient(0) }

// clusterReload is how old a Cluster client's map of slots to masters may get before it
// asks again. go-redis reloads it on MOVED and READONLY replies but not when a master
// stops answering, and its default is a minute: that long a dead master's slots would
// stay unreachable after its replica took over.
const clusterReload = time.Second

// NewClient returns a go-redis client (plain, Sentinel failover or Cluster) with at
// least poolSize connections per server (0: go-redis's default).
func (r *Redis) NewClient(poolSize int) redis.UniversalClient {
	o := r.opt
	o.PoolSize = max(o.PoolSize, poolSize)
	switch r.Topology {
	case Sentinel:
		return redis.NewFailoverClient(o.Failover())
	case Cluster:
		co := o.Cluster()
		co.ClusterStateReloadInterval = clusterReload
		return redis.NewClusterClient(co)
	}
	return redis.NewClient(o.Simple())
}

// AdmissionReplicas is how many replicas must hold a rate-limit admission before it is
// used (Limiter.Replicas): one under Sentinel, where a failover loses what clients wrote
// to the old master meanwhile; none otherwise.
func (r *Redis) AdmissionReplicas() int {
	if r.Topology == Sentinel {
		return 1
	}
	return 0
}
