package tasks

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"time"
	"unsafe"

	"github.com/alicebob/miniredis/v2"
)

// EmbeddedRedis is an in-process Redis for the single-node default install. It keeps
// nothing on disk; that is safe because MySQL (here SQLite) is the source of truth and
// the sweeper re-enqueues whatever Redis lost.
type EmbeddedRedis struct {
	mr       *miniredis.Miniredis
	dbs      *map[int]*miniredis.RedisDB // miniredis's own, read under its lock
	password string
	stop     chan struct{}
}

// StartEmbeddedRedis starts an in-process Redis on a loopback port. Every connection
// must authenticate with password first: anyone on the machine can reach the port, and
// the queues decide what gets sent.
func StartEmbeddedRedis(password string) (*EmbeddedRedis, error) {
	if password == "" {
		return nil, errors.New("tasks: start in-process redis: no password")
	}
	mr := miniredis.NewMiniRedis()
	dbs, err := miniredisDatabases(mr)
	if err != nil {
		return nil, fmt.Errorf("tasks: start in-process redis: %w", err)
	}
	mr.RequireAuth(password)
	if err := mr.Start(); err != nil {
		return nil, fmt.Errorf("tasks: start in-process redis: %w", err)
	}
	e := &EmbeddedRedis{mr: mr, dbs: dbs, password: password, stop: make(chan struct{})}
	go e.tick()
	return e, nil
}

// miniredisDatabases returns miniredis's map of databases, which it does not export.
// Its layout is checked here, at start, so that an upgrade of miniredis that changes
// it fails every test that starts Herald rather than leaking quietly (see
// forgetDeleted).
func miniredisDatabases(mr *miniredis.Miniredis) (*map[int]*miniredis.RedisDB, error) {
	dbs, ok := unexportedField[map[int]*miniredis.RedisDB](reflect.ValueOf(mr).Elem(), "dbs")
	if !ok {
		return nil, errors.New("miniredis has no field dbs of type map[int]*RedisDB: its layout changed, see forgetDeleted")
	}
	probe := mr.DB(0)
	if _, ok := unexportedField[map[string]uint](reflect.ValueOf(probe).Elem(), "keyVersion"); !ok {
		return nil, errors.New("miniredis.RedisDB has no field keyVersion of type map[string]uint: its layout changed, see forgetDeleted")
	}
	if _, ok := unexportedField[map[string]string](reflect.ValueOf(probe).Elem(), "keys"); !ok {
		return nil, errors.New("miniredis.RedisDB has no field keys of type map[string]string: its layout changed, see forgetDeleted")
	}
	return dbs, nil
}

// unexportedField returns a pointer to the field called name of the struct v, when it
// has one of type T.
func unexportedField[T any](v reflect.Value, name string) (*T, bool) {
	f := v.FieldByName(name)
	if !f.IsValid() || f.Type() != reflect.TypeFor[T]() {
		return nil, false
	}
	return (*T)(unsafe.Pointer(f.UnsafeAddr())), true
}

// forgetDeleted drops what miniredis remembers of keys that no longer exist, and
// returns how many keys it still remembers. For WATCH, miniredis counts the changes
// to every key it has ever held in a map it never shrinks, so every task the queues
// ever held would stay in memory, about a hundred bytes each, for as long as Herald
// runs. Nothing that talks to the embedded Redis uses WATCH (Herald's transactions
// are MULTI/EXEC alone, Asynq's are scripts), so the count of a key that is gone is
// never read again.
func (e *EmbeddedRedis) forgetDeleted() (remembered int) {
	e.mr.Lock()
	defer e.mr.Unlock()
	for _, db := range *e.dbs {
		versions, _ := unexportedField[map[string]uint](reflect.ValueOf(db).Elem(), "keyVersion")
		keys, _ := unexportedField[map[string]string](reflect.ValueOf(db).Elem(), "keys")
		for k := range *versions {
			if _, ok := (*keys)[k]; !ok {
				delete(*versions, k)
			}
		}
		remembered += len(*versions)
	}
	return remembered
}

// tick advances miniredis's clock with the wall clock: it never expires keys on its own,
// and Asynq's leases, locks and heartbeats depend on expiry. Every ten seconds it also
// lets miniredis forget the keys that are gone.
func (e *EmbeddedRedis) tick() {
	const every, forgetEvery = 100 * time.Millisecond, 10 * time.Second
	t := time.NewTicker(every)
	defer t.Stop()
	last, forgot := time.Now(), time.Now()
	for {
		select {
		case <-e.stop:
			return
		case now := <-t.C:
			e.mr.FastForward(now.Sub(last))
			last = now
			if now.Sub(forgot) >= forgetEvery {
				e.forgetDeleted()
				forgot = now
			}
		}
	}
}

// Addr is the host:port the embedded Redis listens on.
func (e *EmbeddedRedis) Addr() string { return e.mr.Addr() }

// URL is a redis:// URL for the embedded Redis, with its password.
func (e *EmbeddedRedis) URL() string {
	return (&url.URL{Scheme: "redis", User: url.UserPassword("", e.password), Host: e.mr.Addr(), Path: "/0"}).String()
}

// FlushAll empties the embedded Redis, as a restart without persistence would.
func (e *EmbeddedRedis) FlushAll() { e.mr.FlushAll() }

// Close stops the embedded Redis.
func (e *EmbeddedRedis) Close() {
	close(e.stop)
	e.mr.Close()
}
