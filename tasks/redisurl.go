package tasks

import (
	"slices"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"herald/config"
)

// Redis is where every part of Herald that talks to Redis (Asynq's client, server,
// scheduler and inspector, Asynqmon, the rate limiter) connects, made once from the
// configuration's parsed HERALD_REDIS_URL, so all of them follow the same server,
// Sentinel master or Cluster.
type Redis struct {
	cfg *config.Redis
	opt redis.UniversalOptions
}

// NewRedis returns the connections of a parsed Redis URL.
func NewRedis(c *config.Redis) *Redis {
	return &Redis{cfg: c, opt: redis.UniversalOptions{
		Addrs: c.Addrs, Username: c.Username, Password: c.Password, DB: c.DB, MasterName: c.MasterName,
		SentinelUsername: c.SentinelUsername, SentinelPassword: c.SentinelPassword, TLSConfig: c.TLS,
		DialTimeout: c.DialTimeout, ReadTimeout: c.ReadTimeout, WriteTimeout: c.WriteTimeout, PoolSize: c.PoolSize,
		IsClusterMode: c.Topology == config.Cluster,
	}}
}

// ParseRedisURL parses a Redis URL (config.ParseRedisURL) and returns its connections.
func ParseRedisURL(raw string) (*Redis, error) {
	c, err := config.ParseRedisURL(raw)
	if err != nil {
		return nil, err
	}
	return NewRedis(c), nil
}

// Where names the servers r connects to, without credentials, for messages.
func (r *Redis) Where() string { return r.cfg.Where() }

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
	switch r.cfg.Topology {
	case config.Sentinel:
		return redis.NewFailoverClient(o.Failover())
	case config.Cluster:
		co := o.Cluster()
		co.ClusterStateReloadInterval = clusterReload
		return redis.NewClusterClient(co)
	}
	return redis.NewClient(o.Simple())
}

// AdmissionReplicas is how many replicas must hold a rate-limit admission before it is
// used (NewLimiter asks it): one under Sentinel, where a failover loses what clients wrote
// to the old master meanwhile; none otherwise.
func (r *Redis) AdmissionReplicas() int {
	if r.cfg.Topology == config.Sentinel {
		return 1
	}
	return 0
}

// soleMaster returns what lets a Sentinel master with no replica at all hold
// admissions (see soleMaster); nil for other topologies.
func (r *Redis) soleMaster() *soleMaster {
	if r.cfg.Topology != config.Sentinel {
		return nil
	}
	c := r.cfg
	return &soleMaster{name: c.MasterName, sentinels: slices.Clone(c.Addrs),
		options: func(addr string) *redis.Options {
			return &redis.Options{Addr: addr, Username: c.SentinelUsername, Password: c.SentinelPassword,
				DialTimeout: c.DialTimeout, ReadTimeout: c.ReadTimeout, WriteTimeout: c.WriteTimeout, PoolSize: 1, MaxRetries: -1}
		},
		masterOptions: func(addr string) *redis.Options {
			o := r.opt.Simple()
			o.Addr, o.PoolSize, o.MaxRetries = addr, 1, -1
			return o
		}}
}
