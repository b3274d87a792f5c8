package models

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// A shared intake transaction on MySQL is five statements: its start, the INSERTs of
// the audit entries, the batches and the messages, and its commit. Sent one at a time,
// each is a round trip: a write and a wait in the web process, a wake-up and a read in
// MariaDB. createBatchesOneTrip sends them as one script, in one call. Measured apart
// (docs/benchmarks.md), groups of two single-recipient intakes cost the sending process
// 145 µs an intake in five calls and 93 µs in one, and MariaDB 190 µs and 143 µs.

// oneTripConns is the size of the pool that takes scripts: one per shared intake
// transaction that can run at once (dispatch's writeRunners).
const oneTripConns = 4

// oneTripMaxBytes bounds a script's values, well below MySQL's smallest usual
// max_allowed_packet (16 MiB on MariaDB, 64 MiB on MySQL 8): a larger group of intakes
// is written statement by statement.
const oneTripMaxBytes = 1 << 20

// errNotOneTrip says the intakes are not for a script: they carry more than an audit
// entry beside their rows, or their values are too large.
var errNotOneTrip = errors.New("models: not for one call")

// scriptPool is the pool of connections that take several statements in one call.
type scriptPool struct {
	db *sql.DB
	// cfg is the configuration its connections are opened with.
	cfg *mysqldriver.Config
	// refused is set once the server answered a script as a syntax error: a proxy
	// between Herald and MySQL that does not pass the multi-statement flag on. The
	// intakes are then written statement by statement, without a failed call first.
	refused atomic.Bool
}

// openOneTrip opens the pool of scripts. Every value in a script is escaped by the
// driver, for the connection's character set, as in every other statement
// (interpolateParams); only the shared intake transaction uses this pool. It connects
// when first used.
func openOneTrip(cfg *mysqldriver.Config) (*scriptPool, error) {
	multi := cfg.Clone()
	multi.MultiStatements = true
	return newScriptPool(multi)
}

// newScriptPool opens a pool of oneTripConns connections with cfg.
func newScriptPool(cfg *mysqldriver.Config) (*scriptPool, error) {
	connector, err := mysqldriver.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("models: open mysql for scripts: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(oneTripConns)
	db.SetMaxIdleConns(oneTripConns)
	db.SetConnMaxLifetime(5 * time.Minute)
	return &scriptPool{db: db, cfg: cfg}, nil
}

// usable reports whether intakes may go as scripts.
func (p *scriptPool) usable() bool { return p != nil && !p.refused.Load() }

// erParseError is MySQL's answer to a statement it cannot parse; a connection without
// the multi-statement flag gives it for a script.
const erParseError = 1064

// script gathers statements and their values for one call.
type script struct {
	text  strings.Builder
	args  []any
	bytes int
}

func (sc *script) Insert(stmt string, args []any) error {
	sc.add(stmt, args...)
	return nil
}

func (sc *script) add(stmt string, args ...any) {
	if sc.text.Len() > 0 {
		sc.text.WriteString(";\n")
	}
	sc.text.WriteString(stmt)
	sc.args = append(sc.args, args...)
	for _, a := range args {
		if v, ok := a.(string); ok {
			sc.bytes += 2 * len(v) // every byte could be escaped
		} else {
			sc.bytes += 32
		}
	}
}

// createBatchesOneTrip writes intakes as CreateBatches's shared transaction does, as one
// script: the transaction's start, its INSERTs and its commit in one call. MySQL runs a
// script's statements in order and stops at the first that fails; then the transaction
// is rolled back on the same connection before the connection is used again, and the
// error returned (CreateBatches then writes each intake alone). If the rollback cannot
// be sent, the connection is closed, which rolls the transaction back too. Intakes that
// carry more than an audit entry beside their rows (an idempotent answer, a reminder,
// daily contents) or a message created final, and scripts past oneTripMaxBytes, get
// errNotOneTrip: their statements must see each one's outcome. A script answered as a
// syntax error stops the store sending scripts (scriptPool.refused).
func (s *Store) createBatchesOneTrip(ctx context.Context, items []NewBatch) error {
	for _, it := range items {
		if it.Extras.stepwise() {
			return errNotOneTrip
		}
		for i := range it.Messages {
			if _, final := finalOf(&it.Messages[i], it.Messages[i].Status, it.Messages[i].ErrorClass); final {
				return errNotOneTrip
			}
		}
	}
	var sc script
	sc.add("START TRANSACTION")
	if _, err := insertIntakes(&sc, items); err != nil {
		return err
	}
	sc.add("COMMIT")
	if sc.bytes > oneTripMaxBytes {
		return errNotOneTrip
	}
	conn, err := s.oneTrip.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("models: create batches: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, sc.text.String(), sc.args...); err != nil {
		var me *mysqldriver.MySQLError
		if errors.As(err, &me) && me.Number == erParseError {
			s.oneTrip.refused.Store(true)
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, rerr := conn.ExecContext(rctx, "ROLLBACK"); rerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // closes it
		}
		return fmt.Errorf("models: create batches: %w", err)
	}
	return nil
}
