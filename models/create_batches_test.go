package models_test

import (
	"context"
	"errors"
	"testing"

	"herald/audit"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
)

// TestCreateBatchesSharesATransactionAndFailsAlone: several intakes are written
// together with their messages and audit entries; when one of them cannot be written,
// the others still are, and it leaves nothing behind.
func TestCreateBatchesSharesATransactionAndFailsAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	now := kernel.Now()
	first := f.batch()
	taken := f.message(first.ID, models.StatusPending, now)
	if err := f.store.CreateBatch(ctx, first, []models.Message{taken}, nil); err != nil {
		t.Fatal(err)
	}

	items := f.intakes(4, 2, taken.ID)
	errs := f.store.CreateBatches(ctx, items)
	for i, it := range items {
		got := rowsOf(t, f.store, it)
		if i == 2 {
			if errs[i] == nil || got != [3]int{} {
				t.Errorf("the intake that cannot be written: error %v, left %v messages, batches and audit entries", errs[i], got)
			}
			continue
		}
		if errs[i] != nil || got != [3]int{2, 1, 1} {
			t.Errorf("intake %d: error %v, %v messages, batches and audit entries; want none, [2 1 1]", i, errs[i], got)
		}
	}
}

// intakes returns n new intakes of two messages each with an audit entry; the one at
// index bad has a message whose id is taken, so it cannot be written (-1: none).
func (f *fixture) intakes(n, bad int, taken string) []models.NewBatch {
	now := kernel.Now()
	var items []models.NewBatch
	for i := range n {
		b := f.batch()
		msgs := []models.Message{f.message(b.ID, models.StatusPending, now), f.message(b.ID, models.StatusPending, now)}
		if i == bad {
			msgs[1].ID = taken
		}
		items = append(items, models.NewBatch{Batch: b, Messages: msgs,
			Extras: &models.BatchExtras{Audit: &audit.Entry{Actor: "apikey:test", ActorType: "api_key", Action: "batch.create",
				TargetType: "batch", TargetID: b.ID, Detail: "2 accepted"}}})
	}
	return items
}

// rowsOf counts the messages, batch rows and audit entries of an intake.
func rowsOf(t *testing.T, s *models.Store, it models.NewBatch) [3]int {
	t.Helper()
	return [3]int{testenv.Count(t, s, "SELECT COUNT(*) FROM messages WHERE batch_id = ?", it.Batch.ID),
		testenv.Count(t, s, "SELECT COUNT(*) FROM batches WHERE id = ?", it.Batch.ID),
		testenv.Count(t, s, "SELECT COUNT(*) FROM audit_log WHERE target_id = ?", it.Batch.ID)}
}

// TestOneTripIsAllOrNothing: on MySQL, a script whose INSERT fails leaves none of its
// intakes behind, and its connection holds no transaction afterwards (the next script
// on it, were the failed one still open, would commit its first statements); intakes
// that need each statement's outcome are not for a script.
func TestOneTripIsAllOrNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	first := f.batch()
	taken := f.message(first.ID, models.StatusPending, kernel.Now())
	if err := f.store.CreateBatch(ctx, first, []models.Message{taken}, nil); err != nil {
		t.Fatal(err)
	}
	failed := f.intakes(3, 2, taken.ID)
	ok, err := f.store.CreateBatchesOneTrip(ctx, failed)
	if !ok {
		t.Skip("scripts are for MySQL (set HERALD_TEST_MYSQL_DSN)")
	}
	if err == nil {
		t.Fatal("a script with a taken message id: no error")
	}
	good := f.intakes(3, -1, "")
	if _, err := f.store.CreateBatchesOneTrip(ctx, good); err != nil {
		t.Fatal(err)
	}
	for _, it := range failed {
		if got := rowsOf(t, f.store, it); got != [3]int{} {
			t.Errorf("intake of the failed script: %v messages, batches and audit entries; want none", got)
		}
	}
	for _, it := range good {
		if got := rowsOf(t, f.store, it); got != [3]int{2, 1, 1} {
			t.Errorf("intake of the next script: %v messages, batches and audit entries; want [2 1 1]", got)
		}
	}

	idem := f.intakes(2, -1, "")
	idem[1].Extras.Idem = &models.IdemCompletion{APIKeyID: 1, Key: "k1"}
	if _, err := f.store.CreateBatchesOneTrip(ctx, idem); !errors.Is(err, models.ErrNotOneTrip) {
		t.Errorf("intakes with an idempotent answer: %v, want ErrNotOneTrip", err)
	}
}

// TestScriptsRefusedByTheServer: where the connection does not carry the multi-statement
// flag (a proxy that drops it), MySQL answers a script as a syntax error; the intakes
// are still written, each alone, and the store writes statement by statement from then
// on.
func TestScriptsRefusedByTheServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	ok, err := f.store.WithoutMultiStatements()
	if !ok {
		t.Skip("scripts are for MySQL (set HERALD_TEST_MYSQL_DSN)")
	}
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		items := f.intakes(2, -1, "")
		for i, err := range f.store.CreateBatches(ctx, items) {
			if got := rowsOf(t, f.store, items[i]); err != nil || got != [3]int{2, 1, 1} {
				t.Errorf("round %d, intake %d: %v; %v messages, batches and audit entries, want [2 1 1]", round, i, err, got)
			}
		}
		if !f.store.ScriptsRefused() {
			t.Errorf("round %d: the store still sends scripts after a syntax error", round)
		}
	}
}
