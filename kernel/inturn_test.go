package kernel

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
)

// The embedded database's writes take the writer connection in the order they asked
// for it, statements and transactions alike, not at database/sql's random pick: under
// load a write was otherwise passed over again and again.
func TestWritesTakeTheWriterInTurn(t *testing.T) {
	db := openEmbedded(t)
	ctx := context.Background()
	if err := db.Writer(ctx).Exec("CREATE TABLE turns (n INTEGER)").Error; err != nil {
		t.Fatal(err)
	}
	// A transaction holds the writer while the others line up.
	hold, holding := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- db.Tx(ctx, func(*gorm.DB) error {
			close(holding)
			<-hold
			return nil
		})
	}()
	<-holding
	const writes = 24
	var wg sync.WaitGroup
	errs := make(chan error, writes)
	for i := range writes {
		wg.Go(func() {
			insert := func(g *gorm.DB) error { return g.Exec("INSERT INTO turns (n) VALUES (?)", i).Error }
			if i%2 == 0 {
				errs <- db.Tx(ctx, insert)
			} else {
				errs <- insert(db.Writer(ctx))
			}
		})
		// The next write asks only once this one waits for its turn.
		deadline := time.Now().Add(10 * time.Second)
		for waitingForTurn() < i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("write %d never waited for its turn (%d waiting)", i, waitingForTurn())
			}
			time.Sleep(time.Millisecond)
		}
	}
	close(hold)
	wg.Wait()
	close(errs)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var order []int
	if err := db.Reader(ctx).Raw("SELECT n FROM turns ORDER BY rowid").Scan(&order).Error; err != nil {
		t.Fatal(err)
	}
	for i, n := range order {
		if n != i {
			t.Fatalf("the writes ran in the order %v, want the order they asked in", order)
		}
	}
	if len(order) != writes {
		t.Fatalf("%d writes ran, want %d", len(order), writes)
	}
}

// waitingForTurn counts the goroutines waiting for the writer's turn.
func waitingForTurn() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "kernel.(*inTurn).wait(")
		}
		buf = make([]byte, 2*len(buf))
	}
}
