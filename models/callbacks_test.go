package models_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"herald/access"
	"herald/kernel"
	"herald/models"
)

// TestBatchCompletesOnceUnderConcurrentFinishes: the messages of a callback key's batch
// finish in separate transactions at the same moment, as on several workers; each writes
// its own event, and exactly one of them sees the batch complete. A message retried
// after it stopped opens the batch again.
func TestBatchCompletesOnceUnderConcurrentFinishes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	key, _, err := f.store.Access().CreateCallbackAPIKey(ctx, "crm", "send", "test", access.KeyLimits{},
		&access.CallbackSetting{URL: "https://crm.example/events"})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		msgs := make([]models.Message, 8)
		for i := range msgs {
			msgs[i] = f.message("", models.StatusPending, time.Now().Add(-time.Second))
			msgs[i].CallbackKeyID = &key.ID
		}
		batchID := f.createMessages(t, msgs...)
		var wg sync.WaitGroup
		errs := make([]error, len(msgs))
		for i := range msgs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m, err := f.store.ClaimForSending(ctx, msgs[i].ID, kernel.Now().Add(time.Minute))
				if err != nil {
					errs[i] = err
					return
				}
				o := models.Outcome{Status: models.StatusSent, CountsAttempt: true, Called: true}
				if i%3 == 0 {
					o = models.Outcome{Status: models.StatusStopped, ErrorClass: "permanent", CountsAttempt: true, Called: true}
				}
				errs[i] = f.store.FinishAttempt(ctx, m, o)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, message %d: %v", round, i, err)
			}
		}
		counts := eventCounts(t, f, batchID)
		want := map[string]int{models.EventMessageSent: 5, models.EventMessageStopped: 3, models.EventBatchCompleted: 1}
		for typ, n := range want {
			if counts[typ] != n {
				t.Fatalf("round %d: events %v, want %v", round, counts, want)
			}
		}
		if round == 0 {
			// Retried and sent again: the batch is open, then complete a second time.
			if err := f.store.RetryMessage(ctx, msgs[0].ID, 3); err != nil {
				t.Fatal(err)
			}
			if n := eventCounts(t, f, batchID)[models.EventBatchCompleted]; n != 1 {
				t.Fatalf("a retry completed the batch: %d", n)
			}
			m, err := f.store.ClaimForSending(ctx, msgs[0].ID, kernel.Now().Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.store.FinishAttempt(ctx, m, models.Outcome{Status: models.StatusSent, CountsAttempt: true, Called: true}); err != nil {
				t.Fatal(err)
			}
			if c := eventCounts(t, f, batchID); c[models.EventBatchCompleted] != 2 || c[models.EventMessageSent] != 6 {
				t.Fatalf("after the retry: %v", c)
			}
		}
	}
	// A message of no callback key writes no event.
	plain := f.message("", models.StatusPending, time.Now().Add(-time.Second))
	batchID := f.createMessages(t, plain)
	if err := f.store.CancelMessage(ctx, plain.ID); err != nil {
		t.Fatal(err)
	}
	if c := eventCounts(t, f, batchID); len(c) != 0 {
		t.Errorf("events for a message without a callback: %v", c)
	}
}

func eventCounts(t *testing.T, f *fixture, batchID string) map[string]int {
	t.Helper()
	rows, err := f.store.SQL().Query("SELECT type, COUNT(*) FROM callback_events WHERE batch_id = ? GROUP BY type", batchID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var typ string
		var n int
		if err := rows.Scan(&typ, &n); err != nil {
			t.Fatal(err)
		}
		out[typ] = n
	}
	return out
}
