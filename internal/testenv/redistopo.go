package testenv

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server process (a plain server, a cluster node or a sentinel)
// that a test started on a loopback port; it is killed when the test ends.
type RedisServer struct {
	Addr string
	Dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// redisServerBinary returns redis-server's path, or skips the test: the Sentinel and
// Cluster tests need Debian's redis-server (its binary also runs a sentinel).
func redisServerBinary(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("needs redis-server on PATH (Debian package redis-server) to run a Sentinel group or a Cluster")
	}
	return p
}

// startRedisServer starts redis-server in a temporary directory with the given extra
// configuration lines, written to a file (a sentinel rewrites its file, so it needs one).
func startRedisServer(t testing.TB, conf []string, sentinel bool) *RedisServer {
	t.Helper()
	bin := redisServerBinary(t)
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	lines := append([]string{"port " + port, "bind 127.0.0.1", "dir " + dir, `save ""`, "appendonly no",
		"logfile " + filepath.Join(dir, "redis.log")}, conf...)
	file := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{file}
	if sentinel {
		args = append(args, "--sentinel")
	}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	s := &RedisServer{Addr: addr, Dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(s.Kill)
	c := s.Client()
	defer c.Close()
	WaitFor(t, 10*time.Second, "redis-server on "+addr+" to answer", func() bool {
		return c.Ping(context.Background()).Err() == nil
	})
	return s
}

// Client returns a client of this one server (no redirects, no failover).
func (s *RedisServer) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
}

// Kill stops the server with SIGKILL, as a crash would, and waits until it is gone.
func (s *RedisServer) Kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// Alive reports whether the server process still runs.
func (s *RedisServer) Alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// info returns one field of INFO from a server, or "" when it does not answer.
func (s *RedisServer) info(section, field string) string {
	c := s.Client()
	defer c.Close()
	text, err := c.Info(context.Background(), section).Result()
	return infoField(text, err, field)
}

// clusterState is the cluster_state CLUSTER INFO reports, or "" when it does not answer.
func (s *RedisServer) clusterState() string {
	c := s.Client()
	defer c.Close()
	text, err := c.ClusterInfo(context.Background()).Result()
	return infoField(text, err, "cluster_state")
}

// field_ reads one "field:value" line of an INFO-style reply.
func infoField(text string, err error, field string) string {
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// SentinelGroup is a master, its replicas and three sentinels (quorum two) on loopback.
type SentinelGroup struct {
	MasterName string
	Servers    []*RedisServer // the master and the replicas, in no fixed order after a failover
	Sentinels  []*RedisServer
}

// StartSentinelGroup starts a Sentinel group with the given number of replicas and
// waits until the sentinels know the replicas and each other, so that a failover can
// run at once.
func StartSentinelGroup(t testing.TB, replicas int) *SentinelGroup {
	t.Helper()
	g := &SentinelGroup{MasterName: "herald"}
	master := startRedisServer(t, nil, false)
	g.Servers = []*RedisServer{master}
	for range replicas {
		r := startRedisServer(t, []string{"replicaof " + strings.Replace(master.Addr, ":", " ", 1)}, false)
		g.Servers = append(g.Servers, r)
		WaitFor(t, 10*time.Second, "a replica to sync", func() bool {
			return r.info("replication", "master_link_status") == "up"
		})
	}
	for range 3 {
		g.Sentinels = append(g.Sentinels, startRedisServer(t, []string{
			"sentinel monitor " + g.MasterName + " " + strings.Replace(master.Addr, ":", " ", 1) + " 2",
			"sentinel down-after-milliseconds " + g.MasterName + " 1000",
			"sentinel failover-timeout " + g.MasterName + " 10000",
		}, true))
	}
	ctx := context.Background()
	WaitFor(t, 15*time.Second, "the sentinels to know the replicas and each other", func() bool {
		for _, s := range g.Sentinels {
			c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
			known, err1 := c.Replicas(ctx, g.MasterName).Result()
			others, err2 := c.Sentinels(ctx, g.MasterName).Result()
			c.Close()
			if err1 != nil || err2 != nil || len(known) != replicas || len(others) != len(g.Sentinels)-1 {
				return false
			}
		}
		return true
	})
	return g
}

// URL is the group's redis+sentinel:// URL for HERALD_REDIS_URL.
func (g *SentinelGroup) URL() string {
	addrs := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		addrs[i] = s.Addr
	}
	return "redis+sentinel://" + strings.Join(addrs, ",") + "/" + g.MasterName
}

// Master returns the server the first sentinel names as master.
func (g *SentinelGroup) Master(t testing.TB) *RedisServer {
	t.Helper()
	c := redis.NewSentinelClient(&redis.Options{Addr: g.Sentinels[0].Addr})
	defer c.Close()
	hp, err := c.GetMasterAddrByName(context.Background(), g.MasterName).Result()
	if err != nil {
		t.Fatalf("sentinel master address: %v", err)
	}
	for _, s := range g.Servers {
		if s.Addr == net.JoinHostPort(hp[0], hp[1]) {
			return s
		}
	}
	t.Fatalf("sentinel names %v as master, which the test did not start", hp)
	return nil
}

// Failover asks a sentinel to fail the master over (SENTINEL FAILOVER: the replica is
// promoted and the old master, still running, is turned into its replica), and waits
// until every sentinel names the new master and the new master accepts writes. It
// returns the new master.
func (g *SentinelGroup) Failover(t testing.TB) *RedisServer {
	t.Helper()
	old := g.Master(t)
	c := redis.NewSentinelClient(&redis.Options{Addr: g.Sentinels[0].Addr})
	defer c.Close()
	ctx := context.Background()
	if err := c.Failover(ctx, g.MasterName).Err(); err != nil {
		t.Fatalf("SENTINEL FAILOVER: %v", err)
	}
	var next *RedisServer
	WaitFor(t, 20*time.Second, "every sentinel to name the new master", func() bool {
		for _, s := range g.Sentinels {
			sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
			hp, err := sc.GetMasterAddrByName(ctx, g.MasterName).Result()
			sc.Close()
			if err != nil || net.JoinHostPort(hp[0], hp[1]) == old.Addr {
				return false
			}
		}
		next = g.Master(t)
		return next.info("replication", "role") == "master"
	})
	return next
}

// RedisCluster is a Redis Cluster of masters, each with one replica, on loopback.
type RedisCluster struct {
	Nodes []*RedisServer
}

// StartRedisCluster starts masters × 2 cluster nodes, gives the masters the 16,384 slots
// in equal ranges and one replica each, and waits until the cluster is ok. A node that
// misses others for a second is considered failing, so a killed master's replica takes
// over within a few seconds.
func StartRedisCluster(t testing.TB, masters int) *RedisCluster {
	t.Helper()
	c := &RedisCluster{}
	var busPorts []string
	for range 2 * masters {
		// The bus port is set explicitly: the default, port + 10,000, overflows for
		// ports above 55,535.
		_, bus, _ := net.SplitHostPort(freeLoopbackAddr(t))
		busPorts = append(busPorts, bus)
		c.Nodes = append(c.Nodes, startRedisServer(t, []string{"cluster-enabled yes", "cluster-config-file nodes.conf",
			"cluster-node-timeout 1000", "cluster-replica-validity-factor 0", "cluster-port " + bus}, false))
	}
	ctx := context.Background()
	ids := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		cl := n.Client()
		id, err := cl.Do(ctx, "CLUSTER", "MYID").Text()
		if err == nil && i < masters {
			// Distinct epochs, as redis-cli --cluster create sets them, so no collision
			// has to be resolved before the cluster settles.
			err = cl.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err()
		}
		if err == nil && i < masters {
			from, to := i*16384/masters, (i+1)*16384/masters-1
			err = cl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", from, to).Err()
		}
		cl.Close()
		if err != nil {
			t.Fatalf("set up cluster node %s: %v", n.Addr, err)
		}
		ids[i] = id
	}
	first := c.Nodes[0].Client()
	defer first.Close()
	for i, n := range c.Nodes[1:] {
		host, port, _ := net.SplitHostPort(n.Addr)
		if err := first.Do(ctx, "CLUSTER", "MEET", host, port, busPorts[i+1]).Err(); err != nil {
			t.Fatalf("CLUSTER MEET %s: %v", n.Addr, err)
		}
	}
	WaitFor(t, 20*time.Second, "every node to know every other", func() bool {
		for _, n := range c.Nodes {
			cl := n.Client()
			nodes, err := cl.ClusterNodes(ctx).Result()
			cl.Close()
			if err != nil || strings.Count(strings.TrimSpace(nodes), "\n")+1 != len(c.Nodes) {
				return false
			}
		}
		return true
	})
	for i := masters; i < len(c.Nodes); i++ {
		cl := c.Nodes[i].Client()
		err := cl.ClusterReplicate(ctx, ids[i-masters]).Err()
		cl.Close()
		if err != nil {
			t.Fatalf("CLUSTER REPLICATE on %s: %v", c.Nodes[i].Addr, err)
		}
	}
	c.waitHealthy(t)
	return c
}

// URL is the cluster's redis+cluster:// URL for HERALD_REDIS_URL, naming every node.
func (c *RedisCluster) URL() string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr
	}
	return "redis+cluster://" + strings.Join(addrs, ",")
}

// waitHealthy waits until every running node says the cluster is ok and every replica
// of a running master is in sync.
func (c *RedisCluster) waitHealthy(t testing.TB) {
	t.Helper()
	WaitFor(t, 30*time.Second, "the cluster to be ok with every replica in sync", func() bool {
		for _, n := range c.Nodes {
			if !n.Alive() {
				continue
			}
			if n.clusterState() != "ok" {
				return false
			}
			if n.info("replication", "role") == "slave" && n.info("replication", "master_link_status") != "up" {
				if c.byAddr(n.info("replication", "master_host") + ":" + n.info("replication", "master_port")).Alive() {
					return false
				}
			}
		}
		return true
	})
}

func (c *RedisCluster) byAddr(addr string) *RedisServer {
	for _, n := range c.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	return &RedisServer{done: closed}
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// MasterOf returns the node serving the slot of key (hash tags apply), and its replica.
func (c *RedisCluster) MasterOf(t testing.TB, key string) (master, replica *RedisServer) {
	t.Helper()
	ctx := context.Background()
	for _, n := range c.Nodes {
		if !n.Alive() {
			continue
		}
		cl := n.Client()
		slot, err := cl.ClusterKeySlot(ctx, key).Result()
		var slots []redis.ClusterSlot
		if err == nil {
			slots, err = cl.ClusterSlots(ctx).Result()
		}
		cl.Close()
		if err != nil {
			continue
		}
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) {
				master = c.byAddr(s.Nodes[0].Addr)
				if len(s.Nodes) > 1 {
					replica = c.byAddr(s.Nodes[1].Addr)
				}
				return master, replica
			}
		}
	}
	t.Fatalf("no running node knows who serves %q", key)
	return nil, nil
}

// KillMasterOf kills the master serving key's slot with SIGKILL and waits until its
// replica has taken over and the cluster is ok again. It returns the new master.
func (c *RedisCluster) KillMasterOf(t testing.TB, key string) *RedisServer {
	t.Helper()
	master, replica := c.MasterOf(t, key)
	if replica == nil || !replica.Alive() {
		t.Fatalf("the master of %q has no running replica to take over", key)
	}
	master.Kill()
	WaitFor(t, 30*time.Second, "the replica "+replica.Addr+" to take over", func() bool {
		return replica.info("replication", "role") == "master"
	})
	c.waitHealthy(t)
	return replica
}

// FailoverMasterOf runs CLUSTER FAILOVER on the replica of the master serving key's
// slot (a manual failover: the master stops writes, the replica catches up and takes
// over), and waits until the cluster is ok again. It returns the new master.
func (c *RedisCluster) FailoverMasterOf(t testing.TB, key string) *RedisServer {
	t.Helper()
	_, replica := c.MasterOf(t, key)
	cl := replica.Client()
	defer cl.Close()
	if err := cl.ClusterFailover(context.Background()).Err(); err != nil {
		t.Fatalf("CLUSTER FAILOVER on %s: %v", replica.Addr, err)
	}
	WaitFor(t, 30*time.Second, "the replica "+replica.Addr+" to take over", func() bool {
		return replica.info("replication", "role") == "master"
	})
	c.waitHealthy(t)
	return replica
}

// WatchPromotions polls ROLE on each of servers that is a replica now, every 10 ms,
// until the returned stop is called; stop returns when each of them first answered as
// master, by address. It measures the moment of a promotion from outside the client
// under test.
func WatchPromotions(servers []*RedisServer) (stop func() map[string]time.Time) {
	ctx := context.Background()
	role := func(c *redis.Client) string {
		r, err := c.Do(ctx, "ROLE").Slice()
		if err != nil || len(r) == 0 {
			return ""
		}
		s, _ := r[0].(string)
		return s
	}
	var watched []*RedisServer
	clients := map[string]*redis.Client{}
	for _, s := range servers {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
			ReadTimeout: 200 * time.Millisecond, PoolSize: 1})
		if role(c) == "slave" {
			watched = append(watched, s)
			clients[s.Addr] = c
		} else {
			c.Close()
		}
	}
	promoted := map[string]time.Time{}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, s := range watched {
				if _, ok := promoted[s.Addr]; !ok && role(clients[s.Addr]) == "master" {
					promoted[s.Addr] = time.Now()
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() map[string]time.Time {
		close(done)
		<-finished
		for _, c := range clients {
			c.Close()
		}
		return promoted
	}
}

// WaitFor polls cond every 50 ms until it holds, failing the test after timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freeLoopbackAddr returns a loopback address with a port nothing listens on now.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
