package kernel

import (
	"context"
	"database/sql"
	"sync"

	"gorm.io/gorm"
)

// inTurn is SQLite's writer pool with the writes served in the order they asked for the
// connection. database/sql hands a freed connection to a waiter picked at random; with
// one writer connection and the intake's, the worker's and every other write's
// transactions waiting for it under load, an unlucky write was passed over again and
// again: in the embedded soak a request waited up to 220 ms for the connection while no
// transaction held it longer than 12 ms. Here each statement outside a transaction, and
// each transaction from its start to its commit or rollback, first takes its turn, in
// order, so that at most one write at a time waits inside database/sql.
type inTurn struct {
	db *sql.DB
	// turn holds a token while a statement or a transaction has the connection; the
	// writes waiting for it queue on the channel, which serves its senders in order.
	turn chan struct{}
}

func newInTurn(db *sql.DB) *inTurn { return &inTurn{db: db, turn: make(chan struct{}, 1)} }

// wait takes the turn, or gives up with ctx's error.
func (p *inTurn) wait(ctx context.Context) error {
	select {
	case p.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// done passes the turn to the next write in line.
func (p *inTurn) done() { <-p.turn }

func (p *inTurn) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	defer p.done()
	return p.db.PrepareContext(ctx, query)
}

func (p *inTurn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	defer p.done()
	return p.db.ExecContext(ctx, query, args...)
}

// QueryContext runs a query in turn. The rows keep the connection until they are
// closed; the next write in line waits for it in database/sql, alone.
func (p *inTurn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	defer p.done()
	return p.db.QueryContext(ctx, query, args...)
}

// QueryRowContext is QueryContext for one row. A context that ends before the turn
// comes gives the row its error, as database/sql does.
func (p *inTurn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if err := p.wait(ctx); err != nil {
		return p.db.QueryRowContext(ctx, query, args...)
	}
	defer p.done()
	return p.db.QueryRowContext(ctx, query, args...)
}

// BeginTx starts a transaction in turn; the turn passes on when it commits or rolls
// back.
func (p *inTurn) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	tx, err := p.db.BeginTx(ctx, opts)
	if err != nil {
		p.done()
		return nil, err
	}
	return &txInTurn{Tx: tx, done: sync.OnceFunc(p.done)}, nil
}

// GetDBConn is the pool underneath, for gorm's DB().
func (p *inTurn) GetDBConn() (*sql.DB, error) { return p.db, nil }

// txInTurn is a transaction that passes the turn on as it ends.
type txInTurn struct {
	*sql.Tx
	done func()
}

func (t *txInTurn) Commit() error {
	defer t.done()
	return t.Tx.Commit()
}

func (t *txInTurn) Rollback() error {
	defer t.done()
	return t.Tx.Rollback()
}
