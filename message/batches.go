package message

import (
	"context"
	"errors"
	"math"
	"strconv"

	"herald/audit"
	"herald/delivery"
	"herald/kernel"
	"herald/models"
	"herald/recall"
)

// A whole batch is cancelled, or its stopped messages re-sent, by the same writes as one
// message is (cancelIn, retry): each message changes by compare-and-set on its state,
// so one that moved on meanwhile (sent, cancelled, retried by someone else) is counted
// as skipped and left as it is.

// BatchCancel is what cancelling a batch did.
type BatchCancel struct {
	// Cancelled were pending (scheduled or due) or failed, and are cancelled now.
	Cancelled int
	// Skipped left those states between the read and the write.
	Skipped int
}

// CancelBatch cancels every message of a batch that has not been sent yet: scheduled,
// pending and failed ones (including those held for the batch's approval), as by, in
// one change audited once with the counts. Messages sending at that moment finish their
// attempt. kernel.ErrNotFound: a batch by may not see.
func (d *Operator) CancelBatch(ctx context.Context, by audit.Actor, batchID string) (BatchCancel, error) {
	b, err := d.Batch(ctx, by, batchID)
	if err != nil {
		return BatchCancel{}, err
	}
	targets, err := recall.Of(d.store).BatchMessagesIn(ctx, b.ID, delivery.Cancellable)
	if err != nil {
		return BatchCancel{}, err
	}
	var out BatchCancel
	if len(targets) == 0 {
		return out, nil // nothing to write, nothing to audit
	}
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		out = BatchCancel{} // afresh on every run of the transaction
		for i := range targets {
			err := d.CancelIn(ctx, tx, ch, &targets[i])
			switch {
			case err == nil:
				out.Cancelled++
			case errors.Is(err, kernel.ErrStateChanged):
				out.Skipped++
			default:
				return err
			}
		}
		p := audit.Params{"cancelled": strconv.Itoa(out.Cancelled)}
		if out.Skipped > 0 {
			p["skipped"] = strconv.Itoa(out.Skipped)
		}
		ch.Audit("batch.cancel", "batch", b.ID, p)
		return nil
	})
	return out, err
}

// ResendBatch re-sends the stopped messages of a batch, as by: ResendStopped on the
// batch, every stopped message of it at once. kernel.ErrNotFound: a batch by may not
// see.
func (d *Operator) ResendBatch(ctx context.Context, by audit.Actor, batchID string) (Resent, error) {
	b, err := d.Batch(ctx, by, batchID)
	if err != nil {
		return Resent{}, err
	}
	f := models.MessageFilter{BatchID: b.ID}
	if n, err := d.store.CountStopped(ctx, f); err != nil || n == 0 {
		return Resent{}, err // nothing to write, nothing to audit
	}
	return d.ResendStopped(ctx, by, f, math.MaxInt)
}
