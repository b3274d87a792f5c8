package models_test

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"herald/internal/testenv"
	"herald/models"
)

// TestTransactionsAndFirstQueriesNeverDeadlock holds every connection of a small pool
// inside transactions while other goroutines run statements the process has never run
// before, outside any transaction, and then runs the same statements inside the
// transactions. No goroutine may wait for a connection while it holds something the
// connections' holders wait for, so every round must finish. The pool is one connection
// on SQLite (its writer) and two on MySQL. The bound is a hang detector, not a timing:
// a round takes milliseconds.
func TestTransactionsAndFirstQueriesNeverDeadlock(t *testing.T) {
	opts := testenv.FreshOptions(t)
	pool := 1
	if opts.MySQLDSN != "" {
		pool = 2
		opts.MaxOpenConns = pool
	}
	s, err := models.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- deadlockRounds(ctx, s, pool, 20) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		t.Fatal("transactions and first-time queries deadlocked (goroutine dump on stderr)")
	}
}

// deadlockRounds runs rounds of: pool goroutines each open a transaction (taking every
// connection); then, per transaction, a goroutine outside starts a statement never run
// before, and the transaction runs the same statement; then the transactions commit.
func deadlockRounds(ctx context.Context, s *models.Store, pool, rounds int) error {
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, 4*pool)
		for i := range pool {
			query := fmt.Sprintf("SELECT %d", 1000*round+i+1)
			inTx := make(chan struct{})
			wg.Go(func() {
				errs <- s.RawInTx(ctx, func(q func(string) error) error {
					close(inTx)
					// Let the goroutine outside reach the pool and wait there.
					time.Sleep(20 * time.Millisecond)
					return q(query)
				})
			})
			wg.Go(func() {
				<-inTx
				errs <- s.QueryOutside(ctx, query)
			})
			// A different first-time statement outside too.
			wg.Go(func() {
				<-inTx
				errs <- s.QueryOutside(ctx, query+" + 0")
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
		}
	}
	return nil
}
