package tasks

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// soleMaster lets a Sentinel master that has no replica at all use admissions no
// replica acknowledged, once every sentinel agrees it is the master. That is the state
// right after a failover with one replica: the promoted replica is master and the old
// one rejoins as its replica only 10–15 s later (Sentinel waits before turning it into
// one), during which limited accounts would otherwise send nothing.
//
// Why it holds: an admission is lost only if the master it was written to is replaced
// by a replica that never received it. The old master after a promotion has no replica
// either, but the sentinel running the failover reports it in progress, then names the
// new master; the server at the address every sentinel names is asked its run id. Every
// sentinel the group knows must answer, so the one running a failover is asked too. A
// confirmed master keeps being trusted while it has no replica and has served no
// replica a sync since (its run id and sync counters are unchanged): a replica can only
// take over from it after a sync, and one that syncs receives every admission before.
// What it does not cover is a second failure in those seconds: the new master dying
// before any replica synced, when Sentinel can only promote a replica that never held
// its admissions (the old master before it rejoined, or a replica whose link to it is
// broken: while sentinels see such a replica up, a master is not confirmed).
type soleMaster struct {
	name      string
	sentinels []string
	options   func(addr string) *redis.Options
	// masterOptions are a client's of the master at an address.
	masterOptions func(addr string) *redis.Options
	// check is set while the master is thought to have no replica: admissions then ask
	// the master for its INFO instead of WAITing.
	check atomic.Bool

	mu        sync.Mutex
	confirmed string    // the run id and sync counters of the confirmed master
	tried     time.Time // the last confirmation that failed
}

// soleRetry is how long a failed confirmation stands before the sentinels are asked
// again; the sentinels other than the one that ran a failover learn of it within two
// seconds.
const soleRetry = 200 * time.Millisecond

// masterState is what an admission's master says of itself (INFO server, replication,
// stats), read on the admission's connection right after it.
type masterState struct {
	master   bool
	replicas int
	// id is the run id and the count of syncs served, full and partial.
	id string
}

// parseMasterState reads a master's state from the replies of INFO server, replication
// and stats.
func parseMasterState(server, replication, stats string) masterState {
	replicas := 1
	if infoField(replication, "connected_slaves") == "0" {
		replicas = 0
	}
	id := infoField(server, "run_id")
	if id != "" {
		id += " " + infoField(stats, "sync_full") + " " + infoField(stats, "sync_partial_ok")
	}
	return masterState{master: infoField(replication, "role") == "master", replicas: replicas, id: id}
}

// infoField reads one "field:value" line of an INFO reply; "" when absent.
func infoField(text, name string) string {
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// holds says whether an admission on a master in state m may be used without a
// replica's acknowledgment, asking the sentinels when m is not confirmed yet.
func (s *soleMaster) holds(ctx context.Context, m masterState) bool {
	if !m.master || m.replicas != 0 || m.id == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.confirmed == m.id {
		return true
	}
	if time.Since(s.tried) < soleRetry {
		return false
	}
	if s.confirm(ctx, strings.Fields(m.id)[0]) {
		s.confirmed = m.id
		return true
	}
	s.tried = time.Now()
	return false
}

// confirm asks every sentinel of the group (those of the URL and those they know)
// whether the master with runID is the master, with no failover in progress and no
// replica up that a failover could promote. Sentinels name the master by address: the
// server at that address is asked for its run id.
func (s *soleMaster) confirm(ctx context.Context, runID string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	known := slices.Clone(s.sentinels)
	var master string
	for i := 0; i < len(known); i++ {
		c := redis.NewSentinelClient(s.options(known[i]))
		m, err := c.Master(ctx, s.name).Result()
		var replicas, others []map[string]string
		if err == nil {
			replicas, err = c.Replicas(ctx, s.name).Result()
		}
		if err == nil {
			others, err = c.Sentinels(ctx, s.name).Result()
		}
		c.Close()
		addr := net.JoinHostPort(m["ip"], m["port"])
		if err != nil || m["flags"] != "master" || (master != "" && addr != master) {
			return false
		}
		master = addr
		for _, r := range replicas {
			// A replica the sentinel reaches and that is still a replica (not the old
			// master before it is turned into one) could be promoted without them.
			down := strings.Contains(r["flags"], "s_down") || strings.Contains(r["flags"], "disconnected")
			if !down && r["role-reported"] != "master" {
				return false
			}
		}
		for _, o := range others {
			if addr := net.JoinHostPort(o["ip"], o["port"]); !slices.Contains(known, addr) {
				known = append(known, addr)
			}
		}
	}
	if master == "" {
		return false
	}
	// The sentinels name an address; the master there must be the one written to.
	c := redis.NewClient(s.masterOptions(master))
	defer c.Close()
	text, err := c.Info(ctx, "server").Result()
	return err == nil && infoField(text, "run_id") == runID
}
