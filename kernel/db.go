package kernel

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/glebarez/sqlite"
	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"herald/migrations"
)

// Options configure Open.
type Options struct {
	// MySQLDSN selects MySQL; when empty, SQLite in DataDir is used.
	MySQLDSN string
	DataDir  string
	// SecretKey encrypts account credentials at rest.
	SecretKey []byte
	// PreviousSecretKey, while SecretKey is rotated, opens credentials sealed with the
	// old key; Migrate re-seals them with SecretKey.
	PreviousSecretKey []byte
	// MaxOpenConns bounds the MySQL pool; 0 means 16, which measured faster than large pools.
	MaxOpenConns int
}

// SQLiteFile is the embedded database's file name inside the data directory.
const SQLiteFile = "herald.db"

// sqliteReaders is the size of SQLite's read pool.
const sqliteReaders = 4

// The embedded database's page caches, in KiB for each connection. SQLite as built here
// (memory management on) keeps the page caches of all a process's connections in one
// group, and a connection short of pages takes the least recently used unpinned page of
// the group before its own cache_size stops it: so one connection can grow to the sum of
// every connection's cache_size. The readers start each read with an empty cache when a
// write has committed since their last one, so under load the writer is that one: with
// SQLite's default of 2,000 KiB on each of the six connections, the writer's cache grew
// to 12 MB over ten minutes of full load (22 MiB resident: the allocator gives each
// page, 4 KiB and its header, a slot of 8 KiB). So each connection's share is set here,
// and their sum, 4,112 KiB, is the budget the writer's cache actually reaches.
const (
	writerCacheKiB     = 2000
	readerCacheKiB     = 512
	checkpointCacheKiB = 64
)

// cacheSize is the pragma setting a connection's page cache to kib KiB.
func cacheSize(kib int) string { return fmt.Sprintf("cache_size(-%d)", kib) }

// openSQLite opens a pool of at most conns connections to the SQLite file at path, each
// set up with the given pragmas. A pool of one connection serves its statements and
// transactions in turn (see inTurn).
func openSQLite(path string, gcfg *gorm.Config, conns int, pragmas ...string) (*gorm.DB, error) {
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)"
	for _, p := range pragmas {
		dsn += "&_pragma=" + p
	}
	dialector := &sqlite.Dialector{DSN: dsn}
	if conns == 1 {
		pool, err := sql.Open(sqlite.DriverName, dsn)
		if err != nil {
			return nil, fmt.Errorf("kernel: open sqlite %s: %w", path, err)
		}
		dialector.Conn = newInTurn(pool)
	}
	db, err := gorm.Open(dialector, gcfg)
	if err != nil {
		return nil, fmt.Errorf("kernel: open sqlite %s: %w", path, err)
	}
	sqlDB, _ := db.DB()
	sqlDB.SetMaxOpenConns(conns)
	sqlDB.SetMaxIdleConns(conns)
	return db, nil
}

// Now is the store's clock: UTC, at the microsecond precision MySQL keeps.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Zone is loc, or UTC when there is none: the time zone a service reads dates in.
func Zone(loc *time.Location) *time.Location {
	if loc == nil {
		return time.UTC
	}
	return loc
}

// Clock is a service's clock: nil means Now. Tests give a service a clock of their own.
type Clock func() time.Time

// Now is the clock's time in UTC.
func (c Clock) Now() time.Time {
	if c != nil {
		return c().UTC()
	}
	return Now()
}

// Every runs fn every interval until ctx ends: a worker's background pass (escalation,
// digests, heartbeats).
func Every(ctx context.Context, every time.Duration, fn func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn()
	}
}

// DB is Herald's database: the connections writes and reads run on, its dialect, and
// the sealer of the credentials kept in it. One per process, safe for concurrent use;
// InTx hands out one bound to a transaction.
type DB struct {
	// db writes, and runs every transaction.
	db *gorm.DB
	// read runs reads outside transactions. On SQLite it is a pool of read-only
	// connections beside the one writer: WAL lets them read while the writer writes, so a
	// dashboard or a lookup never queues behind a transaction. On MySQL it is db.
	read    *gorm.DB
	dialect migrations.Dialect
	sealer  *Sealer
	// mysql is the parsed MySQL configuration; nil on SQLite.
	mysql *mysqldriver.Config
	// checkpoints, on SQLite, copies the write-ahead log into the database file off the
	// write path (checkpoint.go); nil on MySQL and in a DB bound to a transaction.
	checkpoints *checkpointer
}

// Open connects to the database named by opts. It does not migrate.
func Open(opts Options) (*DB, error) {
	gcfg := &gorm.Config{
		// Each write is a single statement or an explicit transaction; GORM's implicit
		// transaction around every write costs two extra round trips.
		SkipDefaultTransaction: true,
		// No PrepareStmt: GORM's statement cache (v1.31) prepares a new statement on a
		// connection of its own while other goroutines wait, under one lock for every
		// statement, for it to finish; when a transaction holds the connection that
		// prepare needs and then runs any new statement itself, nothing moves again
		// (gorm#7350, #7465). MySQL interpolates parameters instead (one round trip a
		// statement, as a cached statement takes); SQLite parses in-process.
		NowFunc: Now,
		Logger:  logger.Discard,
	}
	s := &DB{sealer: newSealer(opts.SecretKey, opts.PreviousSecretKey)}
	var err error
	if opts.MySQLDSN != "" {
		s.dialect = migrations.MySQL
		dsn, err := mysqldriver.ParseDSN(opts.MySQLDSN)
		if err != nil {
			return nil, fmt.Errorf("kernel: parse mysql dsn: %w", err)
		}
		// Parameters are sent inline, escaped by the driver for the connection's
		// character set (utf8mb4), instead of a prepare, execute and close per statement.
		dsn.InterpolateParams = true
		s.db, err = gorm.Open(mysql.Open(dsn.FormatDSN()), gcfg)
		if err != nil {
			return nil, fmt.Errorf("kernel: open mysql: %w", err)
		}
		sqlDB, _ := s.db.DB()
		n := opts.MaxOpenConns
		if n <= 0 {
			n = 16
		}
		sqlDB.SetMaxOpenConns(n)
		sqlDB.SetMaxIdleConns(n)
		sqlDB.SetConnMaxLifetime(5 * time.Minute)
		s.read, s.mysql = s.db, dsn
		return s, nil
	}
	s.dialect = migrations.SQLite
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("kernel: create data dir: %w", err)
	}
	path := filepath.Join(opts.DataDir, SQLiteFile)
	// One writer connection: SQLite has one writer at a time, and a single connection
	// turns lock contention into an orderly queue with no SQLITE_BUSY between writers.
	if s.db, err = openSQLite(path, gcfg, 1, "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(1)",
		fmt.Sprintf("wal_autocheckpoint(%d)", sqliteWriterCheckpoint), cacheSize(writerCacheKiB)); err != nil {
		return nil, err
	}
	if s.read, err = openSQLite(path, gcfg, sqliteReaders, "query_only(1)", cacheSize(readerCacheKiB)); err != nil {
		s.Close()
		return nil, err
	}
	if s.checkpoints, err = startCheckpointer(path, gcfg); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Dialect reports which database the database is.
func (s *DB) Dialect() migrations.Dialect { return s.dialect }

// SQL returns the underlying connection pool.
func (s *DB) SQL() *sql.DB {
	db, _ := s.db.DB()
	return db
}

// startLockWait is how long a starting process waits for another one's first-start
// steps (migrations, the first admin) before it gives up.
const startLockWait = 2 * time.Minute

// WithStartLock runs fn while no other process holds the database's start lock, so
// processes started at the same moment on a fresh database migrate and create the first
// admin one after another instead of racing. On MySQL it is a named lock (GET_LOCK) per
// database, held on one connection for the duration; the embedded SQLite database
// belongs to one process, which needs no lock.
func (s *DB) WithStartLock(ctx context.Context, fn func() error) error {
	if s.dialect != migrations.MySQL {
		return fn()
	}
	conn, err := s.SQL().Conn(ctx)
	if err != nil {
		return fmt.Errorf("kernel: start lock: %w", err)
	}
	defer conn.Close()
	const name = "CONCAT('herald-start:', DATABASE())"
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK("+name+", ?)", int(startLockWait.Seconds())).Scan(&got); err != nil {
		return fmt.Errorf("kernel: start lock: %w", err)
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("kernel: start lock: another process held it for %s (a migration still running?)", startLockWait)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK("+name+")")
	return fn()
}

// Ping checks that the database answers.
func (s *DB) Ping(ctx context.Context) error { return s.SQL().PingContext(ctx) }

// Close releases the connection pools.
func (s *DB) Close() error {
	if s.checkpoints != nil {
		s.checkpoints.close()
	}
	if s.read != nil && s.read != s.db {
		readDB, _ := s.read.DB()
		readDB.Close()
	}
	return s.SQL().Close()
}

// MySQLConfig is the MySQL connection's configuration, for a pool of another kind
// beside it; nil on SQLite.
func (s *DB) MySQLConfig() *mysqldriver.Config { return s.mysql }

// Sealer seals and opens the credentials kept in the database.
func (s *DB) Sealer() *Sealer { return s.sealer }

// Writer is where a write runs: the writer connection, or the transaction a bound DB
// runs in.
func (s *DB) Writer(ctx context.Context) *gorm.DB { return s.db.WithContext(ctx) }

// Reader is where a read outside a transaction runs.
func (s *DB) Reader(ctx context.Context) *gorm.DB { return s.read.WithContext(ctx) }

// InTx runs fn with a DB whose every statement, reads included, runs in one
// transaction: what fn writes through it commits together or not at all. A
// transaction run on it runs nested (a savepoint) inside this one.
func (s *DB) InTx(ctx context.Context, fn func(tx *DB) error) error {
	return s.Tx(ctx, func(tx *gorm.DB) error {
		bound := *s
		bound.db, bound.read, bound.checkpoints = tx, tx, nil
		return fn(&bound)
	})
}

// Tx runs fn in one transaction.
func (s *DB) Tx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.db.WithContext(ctx).Transaction(fn)
}

// TxRetry is Tx, run again (up to lockRetries times in all) when MySQL rolled it back
// as a deadlock victim or after a lock wait timeout: the transaction left nothing behind
// and can simply run again. fn must start from scratch each time it is called.
func (s *DB) TxRetry(ctx context.Context, fn func(tx *gorm.DB) error) error {
	for try := 1; ; try++ {
		err := s.Tx(ctx, fn)
		if err == nil || !IsLockConflict(err) || try == lockRetries || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Duration(try) * 5 * time.Millisecond)
	}
}

// lockRetries is how many times TxRetry runs a transaction that keeps losing lock conflicts.
const lockRetries = 4
