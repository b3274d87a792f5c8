// Package models holds Herald's GORM models and its store: every query the application
// makes lives here, in a method named for the question it answers.
package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"herald/migrations"
)

// Named errors the store returns; callers compare with errors.Is.
var (
	ErrNotFound  = errors.New("not found")
	ErrDuplicate = errors.New("already exists")
	// ErrStateChanged means a compare-and-set update matched no row: another actor moved
	// the row out of the state the caller expected.
	ErrStateChanged = errors.New("state changed concurrently")
)

// Store is Herald's data access: one per process, safe for concurrent use.
type Store struct {
	db      *gorm.DB
	dialect migrations.Dialect
	sealer  *sealer
}

// Options configure Open.
type Options struct {
	// MySQLDSN selects MySQL; when empty, SQLite in DataDir is used.
	MySQLDSN string
	DataDir  string
	// SecretKey encrypts account credentials at rest.
	SecretKey []byte
	// MaxOpenConns bounds the MySQL pool; 0 means 16, which measured faster than large pools.
	MaxOpenConns int
}

// SQLiteFile is the embedded database's file name inside the data directory.
const SQLiteFile = "herald.db"

// Open connects to the database named by opts. It does not migrate; call Migrate.
func Open(opts Options) (*Store, error) {
	gcfg := &gorm.Config{
		// Each write is a single statement or an explicit transaction; GORM's implicit
		// transaction around every write costs two extra round trips.
		SkipDefaultTransaction: true,
		PrepareStmt:            true,
		NowFunc:                Now,
		Logger:                 logger.Discard,
	}
	s := &Store{sealer: newSealer(opts.SecretKey)}
	var err error
	if opts.MySQLDSN != "" {
		s.dialect = migrations.MySQL
		s.db, err = gorm.Open(mysql.Open(opts.MySQLDSN), gcfg)
		if err != nil {
			return nil, fmt.Errorf("models: open mysql: %w", err)
		}
		sqlDB, _ := s.db.DB()
		n := opts.MaxOpenConns
		if n <= 0 {
			n = 16
		}
		sqlDB.SetMaxOpenConns(n)
		sqlDB.SetMaxIdleConns(n)
		sqlDB.SetConnMaxLifetime(5 * time.Minute)
		return s, nil
	}
	s.dialect = migrations.SQLite
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("models: create data dir: %w", err)
	}
	path := filepath.Join(opts.DataDir, SQLiteFile)
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)"
	s.db, err = gorm.Open(sqlite.Open(dsn), gcfg)
	if err != nil {
		return nil, fmt.Errorf("models: open sqlite %s: %w", path, err)
	}
	sqlDB, _ := s.db.DB()
	// SQLite has one writer; one connection turns lock contention into an orderly queue.
	sqlDB.SetMaxOpenConns(1)
	return s, nil
}

// Now is the store's clock: UTC, at the microsecond precision MySQL keeps.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Dialect reports which database the store talks to.
func (s *Store) Dialect() migrations.Dialect { return s.dialect }

// SQL returns the underlying connection pool.
func (s *Store) SQL() *sql.DB {
	db, _ := s.db.DB()
	return db
}

// Migrate applies pending migrations. fresh reports whether the database was new (no
// migration applied before), which is when demo data may be seeded.
func (s *Store) Migrate(ctx context.Context) (fresh bool, err error) {
	_, before, err := migrations.Up(ctx, s.SQL(), s.dialect)
	if err != nil {
		return false, err
	}
	return before == 0, nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.SQL().PingContext(ctx) }

// Close releases the connection pool.
func (s *Store) Close() error { return s.SQL().Close() }

// tx runs fn in one transaction.
func (s *Store) tx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.db.WithContext(ctx).Transaction(fn)
}

// isDuplicate reports whether err is a unique-key violation on either dialect.
func isDuplicate(err error) bool {
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1062
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// notFound maps GORM's record-not-found to ErrNotFound, keeping other errors.
func notFound(err error) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ErrNotFound
	}
	return err
}
