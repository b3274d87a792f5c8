// Package testenv gives tests real backends: MariaDB/MySQL and Redis when
// HERALD_TEST_MYSQL_DSN and HERALD_TEST_REDIS_URL are set (CI sets them), the embedded
// SQLite and in-process Redis otherwise. Each test gets its own database.
package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"herald/kernel"
	"herald/models"
	"herald/tasks"
)

// SecretKey is the credential key tests open stores with.
var SecretKey = []byte("test-secret-key-test-secret-key-0123456789")

// MySQLDSN returns a DSN for a new, empty MySQL database that is dropped when the test
// ends, or "" when HERALD_TEST_MYSQL_DSN is not set. A process a test starts on it
// migrates it as on a first start; MigratedMySQLDSN returns one already migrated.
func MySQLDSN(t testing.TB) string {
	t.Helper()
	server, admin := mysqlServer(t)
	if server == nil {
		return ""
	}
	return databaseDSN(server, newDatabase(t, admin))
}

// newDatabase creates an empty herald_test_* database, dropped when the test ends, and
// returns its name.
func newDatabase(t testing.TB, admin *sql.DB) string {
	t.Helper()
	name := "herald_test_" + randomHex(6)
	if err := createDatabase(admin, name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	return name
}

// Store returns a store on a fresh database in the state the migrations leave a new one:
// MySQL when configured, SQLite in a temporary directory otherwise. The database is a
// copy of one the test binary migrated once (template.go).
func Store(t testing.TB) *models.Store {
	t.Helper()
	opts := kernel.Options{MySQLDSN: MigratedMySQLDSN(t), SecretKey: SecretKey}
	if opts.MySQLDSN == "" {
		opts.DataDir = MigratedDataDir(t)
	}
	s, err := models.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// RedisURL returns the URL of an empty Redis database for this test: a database number
// of HERALD_TEST_REDIS_URL's server reserved for the test (flushed before and after), or
// a new in-process Redis.
//
// Asynq's keys have no prefix, so no two tests may share a database number, whether they
// run in one test binary (t.Parallel) or in several (go test runs packages at once, and
// several checkouts may use one server). Database 0 holds the reservations
// (herald:test:db:<n>, kept alive while the test runs, gone a minute after a killed
// binary) and the queue of tests waiting for one: a test takes a free database only when
// no test that asked earlier is still waiting, so a busy server makes tests wait their
// turn, not starve.
func RedisURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("HERALD_TEST_REDIS_URL")
	if base == "" {
		r, err := tasks.StartEmbeddedRedis(randomHex(16))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		return r.URL()
	}
	opt, err := redis.ParseURL(base)
	if err != nil {
		t.Fatalf("HERALD_TEST_REDIS_URL: %v", err)
	}
	ctl := redis.NewClient(&redis.Options{Addr: opt.Addr, Password: opt.Password, DB: 0})
	ctx := context.Background()
	owner := randomHex(8)
	databases := 16
	if v, err := ctl.ConfigGet(ctx, "databases").Result(); err == nil {
		if n, err := strconv.Atoi(v["databases"]); err == nil && n > 1 {
			databases = n
		}
	}
	wait := 10 * time.Minute
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if at, ok := d.Deadline(); ok {
			wait = time.Until(at) - 30*time.Second
		}
	}
	deadline := time.Now().Add(wait)
	var db int
	for {
		db, err = reserveRedisDB.Run(ctx, ctl, nil, owner, databases,
			redisReservation.Milliseconds(), redisWaiterAlive.Milliseconds()).Int()
		if err != nil {
			ctl.Close()
			t.Fatalf("reserve a redis database: %v", err)
		}
		if db > 0 {
			break
		}
		if time.Now().After(deadline) {
			ctl.Del(ctx, "herald:test:db:alive:"+owner)
			ctl.Close()
			t.Fatalf("no free Redis database for the test after %s: tests holding all %d of %s's", wait.Round(time.Second), databases-1, opt.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	key := fmt.Sprintf("herald:test:db:%d", db)
	flush(t, opt, db)
	// Keep the reservation alive while the test runs; it lapses soon after a binary dies.
	stop := make(chan struct{})
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		tick := time.NewTicker(redisReservation / 6)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				keepRedisDB.Run(ctx, ctl, []string{key}, owner, redisReservation.Milliseconds())
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-kept
		flush(t, opt, db)
		releaseRedisDB.Run(ctx, ctl, []string{key}, owner)
		ctl.Close()
	})
	u := fmt.Sprintf("redis://%s/%d", opt.Addr, db)
	if opt.Password != "" {
		u = fmt.Sprintf("redis://:%s@%s/%d", opt.Password, opt.Addr, db)
	}
	return u
}

const (
	// redisReservation is how long a reservation outlives the last sign that its test runs.
	redisReservation = time.Minute
	// redisWaiterAlive is how long a waiting test keeps its place in the queue without
	// asking again.
	redisWaiterAlive = 10 * time.Second
)

// reserveRedisDB queues the waiter ARGV[1] if it is not queued yet and gives it a free
// database of 1..ARGV[2]-1 when fewer waiters are ahead of it than databases are free,
// reserving it for ARGV[3] ms; it answers 0 when the waiter must ask again. Waiters that
// stopped asking for ARGV[4] ms leave the queue.
var reserveRedisDB = redis.NewScript(`
local queue, owner = 'herald:test:db:queue', ARGV[1]
redis.call('SET', 'herald:test:db:alive:' .. owner, '1', 'PX', ARGV[4])
if not redis.call('ZSCORE', queue, owner) then
  redis.call('ZADD', queue, redis.call('INCR', 'herald:test:db:ticket'), owner)
end
local ahead = 0
for _, w in ipairs(redis.call('ZRANGE', queue, 0, -1)) do
  if w == owner then break end
  if redis.call('EXISTS', 'herald:test:db:alive:' .. w) == 1 then
    ahead = ahead + 1
  else
    redis.call('ZREM', queue, w)
  end
end
local free = {}
for db = 1, tonumber(ARGV[2]) - 1 do
  if redis.call('EXISTS', 'herald:test:db:' .. db) == 0 then table.insert(free, db) end
end
if ahead >= #free then return 0 end
local db = free[ahead + 1]
redis.call('SET', 'herald:test:db:' .. db, owner, 'PX', ARGV[3])
redis.call('ZREM', queue, owner)
redis.call('DEL', 'herald:test:db:alive:' .. owner)
return db
`)

// keepRedisDB extends the reservation KEYS[1] of ARGV[1] by ARGV[2] ms.
var keepRedisDB = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`)

// releaseRedisDB ends the reservation KEYS[1] of ARGV[1].
var releaseRedisDB = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

func flush(t testing.TB, opt *redis.Options, db int) {
	c := redis.NewClient(&redis.Options{Addr: opt.Addr, Password: opt.Password, DB: db})
	defer c.Close()
	if err := c.FlushDB(context.Background()).Err(); err != nil {
		t.Fatalf("flush redis db %d: %v", db, err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Enqueuer returns an enqueuer on an empty Redis database of the test's own (RedisURL).
func Enqueuer(t testing.TB) *tasks.Enqueuer {
	t.Helper()
	red, err := tasks.ParseRedisURL(RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	enq := tasks.NewEnqueuer(red.Asynq())
	t.Cleanup(func() { enq.Close() })
	return enq
}
