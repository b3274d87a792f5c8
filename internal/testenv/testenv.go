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
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"herald/models"
	"herald/tasks"
)

// SecretKey is the credential key tests open stores with.
var SecretKey = []byte("test-secret-key-test-secret-key-0123456789")

// MySQLDSN returns a DSN for a new, empty MySQL database that is dropped when the test
// ends, or "" when HERALD_TEST_MYSQL_DSN is not set.
func MySQLDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv("HERALD_TEST_MYSQL_DSN")
	if base == "" {
		return ""
	}
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		t.Fatalf("HERALD_TEST_MYSQL_DSN: %v", err)
	}
	cfg.DBName = ""
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("open mysql: %v", err)
	}
	name := "herald_test_" + randomHex(6)
	if _, err := admin.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		admin.Close()
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
		admin.Close()
	})
	cfg.DBName = name
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["charset"] = "utf8mb4"
	return cfg.FormatDSN()
}

// Store returns a migrated store on a fresh database: MySQL when configured, SQLite in a
// temporary directory otherwise.
func Store(t testing.TB) *models.Store {
	t.Helper()
	s, err := models.Open(models.Options{MySQLDSN: MySQLDSN(t), DataDir: t.TempDir(), SecretKey: SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// RedisURL returns the URL of an empty Redis database for this test: a database number
// of HERALD_TEST_REDIS_URL's server reserved for the test (flushed before and after), or
// a new in-process Redis.
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
	// Asynq's keys have no prefix, so tests running in parallel (go test runs packages
	// at once) each need a database of their own. Database 0 holds the reservations.
	ctl := redis.NewClient(&redis.Options{Addr: opt.Addr, Password: opt.Password, DB: 0})
	defer ctl.Close()
	ctx := context.Background()
	owner := randomHex(8)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		for db := 1; db < 16; db++ {
			key := fmt.Sprintf("herald:test:db:%d", db)
			ok, err := ctl.SetNX(ctx, key, owner, 15*time.Minute).Result()
			if err != nil {
				t.Fatalf("reserve redis db: %v", err)
			}
			if !ok {
				continue
			}
			flush(t, opt, db)
			t.Cleanup(func() {
				flush(t, opt, db)
				c := redis.NewClient(&redis.Options{Addr: opt.Addr, Password: opt.Password, DB: 0})
				defer c.Close()
				if v, _ := c.Get(ctx, key).Result(); v == owner {
					c.Del(ctx, key)
				}
			})
			u := fmt.Sprintf("redis://%s/%d", opt.Addr, db)
			if opt.Password != "" {
				u = fmt.Sprintf("redis://:%s@%s/%d", opt.Password, opt.Addr, db)
			}
			return u
		}
		if time.Now().After(deadline) {
			t.Fatal("no free Redis database for the test after 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

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
