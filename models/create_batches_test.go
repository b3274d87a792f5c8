package models_test

import (
	"context"
	"testing"

	"herald/models"
)

// TestCreateBatchesSharesATransactionAndFailsAlone: several intakes are written
// together with their messages and audit entries; when one of them cannot be written,
// the others still are, and it leaves nothing behind.
func TestCreateBatchesSharesATransactionAndFailsAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	now := models.Now()
	first := f.batch()
	taken := f.message(first.ID, models.StatusPending, now)
	if err := f.store.CreateBatch(ctx, first, []models.Message{taken}, nil); err != nil {
		t.Fatal(err)
	}

	var items []models.NewBatch
	for i := range 4 {
		b := f.batch()
		msgs := []models.Message{f.message(b.ID, models.StatusPending, now), f.message(b.ID, models.StatusPending, now)}
		if i == 2 {
			msgs[1].ID = taken.ID // a message id that exists already: this intake cannot be written
		}
		items = append(items, models.NewBatch{Batch: b, Messages: msgs,
			Extras: &models.BatchExtras{Audit: &models.AuditEntry{Actor: "apikey:test", ActorType: "api_key", Action: "batch.create",
				TargetType: "batch", TargetID: b.ID, Detail: "2 accepted"}}})
	}
	errs := f.store.CreateBatches(ctx, items)
	for i, it := range items {
		msgs := count(t, f.store, "SELECT COUNT(*) FROM messages WHERE batch_id = ?", it.Batch.ID)
		batches := count(t, f.store, "SELECT COUNT(*) FROM batches WHERE id = ?", it.Batch.ID)
		audits := count(t, f.store, "SELECT COUNT(*) FROM audit_log WHERE target_id = ?", it.Batch.ID)
		if i == 2 {
			if errs[i] == nil || msgs+batches+audits != 0 {
				t.Errorf("the intake that cannot be written: error %v, left %d messages, %d batches, %d audit entries", errs[i], msgs, batches, audits)
			}
			continue
		}
		if errs[i] != nil || msgs != 2 || batches != 1 || audits != 1 {
			t.Errorf("intake %d: error %v, %d messages, %d batches, %d audit entries; want none, 2, 1, 1", i, errs[i], msgs, batches, audits)
		}
	}
}
