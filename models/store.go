// Package models holds Herald's GORM models and its store: every query the application
// makes lives here, in a method named for the question it answers.
package models

import (
	"context"
	"database/sql"

	"gorm.io/gorm"

	"herald/access"
	"herald/audit"
	"herald/directory"
	"herald/duty"
	"herald/kernel"
	"herald/migrations"
	"herald/sending"
	"herald/templates"
)

// Store is Herald's data access: one per process, safe for concurrent use.
type Store struct {
	// k is the database: its connections, transactions and sealer.
	k *kernel.DB
	// access is the access domain's store: users, sessions, API keys.
	access *access.Credentials
	// sending is the sending accounts' store.
	sending *sending.AccountBook
	// templates is the templates' store.
	templates *templates.Library
	// duty is the duty roster's store.
	duty *duty.Schedule
	// directory is the staff directory's store, with the intake's cache of recipients.
	directory *directory.Staff
	// oneTrip, on MySQL, is the pool that takes a shared intake transaction as one
	// script (one_trip.go); nil on SQLite and in a store bound to a transaction.
	oneTrip *scriptPool
}

// Open connects to the database named by opts. It does not migrate; call Migrate.
func Open(opts kernel.Options) (*Store, error) {
	k, err := kernel.Open(opts)
	if err != nil {
		return nil, err
	}
	s := &Store{k: k, directory: directory.NewStore(k), sending: sending.NewStore(k), templates: templates.NewStore(k), access: access.NewStore(k)}
	s.duty = duty.NewStore(k, s.directory)
	if cfg := k.MySQLConfig(); cfg != nil {
		if s.oneTrip, err = openOneTrip(cfg); err != nil {
			k.Close()
			return nil, err
		}
	}
	return s, nil
}

// Dialect reports which database the store talks to.
func (s *Store) Dialect() migrations.Dialect { return s.k.Dialect() }

// SQL returns the underlying connection pool.
func (s *Store) SQL() *sql.DB { return s.k.SQL() }

// Migrate applies pending migrations, then re-seals account credentials sealed before
// they were bound to their account (a step SQL cannot do). fresh reports whether the
// database was new (no migration applied before), which is when demo data may be seeded.
func (s *Store) Migrate(ctx context.Context) (fresh bool, err error) {
	_, fresh, err = s.MigrateUp(ctx)
	return fresh, err
}

// MigrateUp is Migrate, also reporting how many migrations it applied.
func (s *Store) MigrateUp(ctx context.Context) (applied int, fresh bool, err error) {
	applied, before, err := migrations.Up(ctx, s.SQL(), s.k.Dialect())
	if err != nil {
		return 0, false, err
	}
	if _, err := s.Sending().ResealAccounts(ctx); err != nil {
		return applied, false, err
	}
	if err := s.Access().ResealCallbackSecrets(ctx); err != nil {
		return applied, false, err
	}
	return applied, before == 0, nil
}

// WithStartLock runs fn while no other process holds the database's start lock
// (kernel.DB.WithStartLock).
func (s *Store) WithStartLock(ctx context.Context, fn func() error) error {
	return s.k.WithStartLock(ctx, fn)
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.k.Ping(ctx) }

// Close releases the connection pools.
func (s *Store) Close() error {
	if s.oneTrip != nil {
		s.oneTrip.db.Close()
	}
	return s.k.Close()
}

// reader is where a read outside a transaction runs.
func (s *Store) reader(ctx context.Context) *gorm.DB { return s.k.Reader(ctx) }

// InTx runs fn with a store whose every statement, reads included, runs in one
// transaction: what fn writes through it commits together or not at all. The service
// layer writes a change and its audit entry this way. Store methods that run a
// transaction of their own run it nested (a savepoint) inside this one.
func (s *Store) InTx(ctx context.Context, fn func(tx *Store) error) error {
	return s.k.InTx(ctx, func(k *kernel.DB) error { return fn(s.On(k)) })
}

// On is the store on tx, the database bound to a transaction (kernel.DB.InTx): what a
// service's change (audit.Run) reads and writes through.
func (s *Store) On(tx *kernel.DB) *Store {
	bound := *s
	bound.k, bound.oneTrip = tx, nil
	bound.access = s.access.On(tx)
	bound.directory = s.directory.On(tx)
	bound.sending = s.sending.On(tx)
	bound.templates = s.templates.On(tx)
	bound.duty = s.duty.On(tx)
	return &bound
}

// Access is the access domain's store on the store's database: users, sessions, API keys.
func (s *Store) Access() *access.Credentials { return s.access }

// Directory is the staff directory's store on the store's database.
func (s *Store) Directory() *directory.Staff { return s.directory }

// Sending is the sending accounts' store on the store's database.
func (s *Store) Sending() *sending.AccountBook { return s.sending }

// Templates is the templates' store on the store's database.
func (s *Store) Templates() *templates.Library { return s.templates }

// Duty is the duty roster's store on the store's database.
func (s *Store) Duty() *duty.Schedule { return s.duty }

// DB is the database the store reads and writes.
func (s *Store) DB() *kernel.DB { return s.k }

// AuditLog is the audit log on the store's database, in its transaction when it is bound
// to one.
func (s *Store) AuditLog() *audit.Log { return audit.NewLog(s.k) }

// tx runs fn in one transaction.
func (s *Store) tx(ctx context.Context, fn func(tx *gorm.DB) error) error { return s.k.Tx(ctx, fn) }

// txRetry runs fn in one transaction, again after a lock conflict (kernel.DB.TxRetry).
func (s *Store) txRetry(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.k.TxRetry(ctx, fn)
}

// Intake is the intake's queries on the store's database: approvals, idempotency keys,
// digests, fallback chains, duty reminders and the messages a template's new version
// settles. It is the store itself, seen through what the intake asks of it.
type Intake Store

// Intake is the intake's queries on the store's database, in its transaction when it
// is bound to one.
func (s *Store) Intake() *Intake { return (*Intake)(s) }

// Outbox is the callback outbox on the store's database: the events each API key hears
// of, their leases and their delivery.
type Outbox Store

// Outbox is the callback outbox on the store's database, in its transaction when it is
// bound to one.
func (s *Store) Outbox() *Outbox { return (*Outbox)(s) }
