package models_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"herald/kernel"
	"herald/models"
)

// TestFinishesSurviveLeaseRenewals: a worker's lease renewal and its finish of a batch
// lock the same rows; whatever order the batch comes in, the finish must never be lost
// to a deadlock (a lost finish leaves the claims to expire, and a sent message is then
// sent again). Each round claims the rows, then renews and finishes them at once.
func TestFinishesSurviveLeaseRenewals(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	now := time.Now()
	msgs := make([]models.Message, 60)
	for i := range msgs {
		msgs[i] = f.message("", models.StatusPending, now.Add(-time.Second))
	}
	f.createMessages(t, msgs...)
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	slices.Sort(ids)
	for round := range 25 {
		found, token, err := f.store.ClaimMany(ctx, ids, kernel.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		var items []models.Finish
		for _, id := range slices.Backward(ids) { // the opposite of the renewal's order
			m := found[id]
			if !m.Claimed(token) {
				t.Fatalf("round %d: %s not claimed", round, id)
			}
			next := kernel.Now().Add(-time.Second)
			items = append(items, models.Finish{Message: m, Outcome: models.Outcome{Status: models.StatusFailed,
				ErrorClass: "transient", Error: "round", NextAttemptAt: &next}})
		}
		var wg sync.WaitGroup
		var renewErr error
		var finishErrs []error
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 3 {
				if _, err := f.store.RenewLeases(ctx, ids, []string{token}, kernel.Now().Add(time.Minute)); err != nil {
					renewErr = err
				}
			}
		}()
		go func() { defer wg.Done(); finishErrs = f.store.FinishAttempts(ctx, items) }()
		wg.Wait()
		if renewErr != nil {
			t.Fatalf("round %d: renew: %v", round, renewErr)
		}
		for i, err := range finishErrs {
			if err != nil {
				t.Fatalf("round %d: finish of %s: %v", round, items[i].Message.ID, err)
			}
		}
	}
}
