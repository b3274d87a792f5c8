package dispatch

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"herald/audit"
	"herald/kernel"
	"herald/models"
	"herald/tasks"
	"herald/templates"
)

// Maker-checker: a batch for more people than the approval threshold is stored with its
// messages held (pending, never due) until another person approves it, which releases
// them, or rejects it, which cancels them. Nobody decides on their own batch: the people
// who made it (Batch.Makers: the console user who composed it, the creator of the API
// key that sent it, whoever last set up the duty reminder it is) may not approve or
// reject it, whether they act in the console or through any API key of theirs.

// ErrOwnBatch refuses a decision by the batch's maker.
var ErrOwnBatch = kernel.Declare(kernel.DomainError{Kind: kernel.KindForbidden, Code: "forbidden", Key: "approvals.error.own_batch",
	Text: "dispatch: the maker of a batch cannot decide on it"})

// ErrNotYourBatch refuses a withdrawal by someone who is not a maker of the batch.
var ErrNotYourBatch = kernel.Declare(kernel.DomainError{Kind: kernel.KindForbidden, Code: "forbidden", Key: "people.withdraw.not_yours",
	Text: "dispatch: only a maker of a batch can withdraw it"})

// WithdrawBatch is a maker taking back their own batch while it awaits approval: its
// held messages are cancelled and it leaves the approvers' list, recorded as a rejection
// by the maker with the note models.ApprovalWithdrawn (a compare-and-set on the batch's
// approval state), audited batch.withdraw. ErrNotYourBatch refuses anyone else;
// kernel.ErrStateChanged means it was decided (or withdrawn) meanwhile. (A function,
// not a Dispatcher method: the Dispatcher is full.)
func WithdrawBatch(ctx context.Context, d *Dispatcher, by audit.Actor, b *models.Batch) (int, error) {
	if b.Approval != models.ApprovalAwaiting {
		// Nothing to withdraw, whoever asks (the change's compare-and-set checks again).
		return 0, kernel.ErrStateChanged
	}
	if own, err := d.ownBatch(ctx, b, by); err != nil || !own {
		return 0, cmp.Or(err, error(ErrNotYourBatch))
	}
	var n int
	err := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		var err error
		if n, err = tx.Intake().RejectBatch(ctx, b.ID, by.Name, models.ApprovalWithdrawn, d.now()); err != nil {
			return err
		}
		if err := d.alerts.EndRejected(ctx, tx, ch, by, b.ID, models.ApprovalWithdrawn); err != nil {
			return err
		}
		ch.Audit("batch.withdraw", "batch", b.ID, audit.Params{"cancelled": strconv.Itoa(n)})
		if b.APIKeyID != nil {
			ch.After(func() { d.callbacks.Kick(*b.APIKeyID) })
		}
		return nil
	})
	return n, err
}

// thresholdTTL is how long an intake trusts the approval threshold it read: a change
// reaches every process within it.
const thresholdTTL = time.Second

// thresholdCache remembers the approval threshold for thresholdTTL.
type thresholdCache struct {
	mu   sync.Mutex
	n    int
	read time.Time
}

// approvalThreshold returns the current approval threshold (0 = off).
func (d *Dispatcher) approvalThreshold(ctx context.Context) (int, error) {
	c := &d.threshold
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if !c.read.IsZero() && now.Sub(c.read) < thresholdTTL {
		return c.n, nil
	}
	n, err := d.store.Intake().ApprovalThreshold(ctx)
	if err != nil {
		return 0, err
	}
	c.n, c.read = n, now
	return n, nil
}

// ForgetThreshold makes the next intake read the threshold again: the process that
// changed it applies the change at once.
func (d *Dispatcher) ForgetThreshold() {
	d.threshold.mu.Lock()
	d.threshold.read = time.Time{}
	d.threshold.mu.Unlock()
}

// overThreshold reports whether a batch for this many people waits for approval, and
// the threshold (0: approval is off).
func (d *Dispatcher) overThreshold(ctx context.Context, people int) (threshold int, over bool, err error) {
	n, err := d.approvalThreshold(ctx)
	if err != nil {
		return 0, false, err
	}
	return n, n > 0 && people > n, nil
}

// holdForApproval marks a planned batch as awaiting approval when it is for more people
// than the threshold (for an alert, when its policy can reach more), holding its
// messages: no due time, no task.
func (d *Dispatcher) holdForApproval(ctx context.Context, res *Result) error {
	_, over, err := d.overThreshold(ctx, max(res.Batch.Accepted, res.reach))
	if err != nil || !over {
		return err
	}
	res.Batch.Approval = models.ApprovalAwaiting
	for i := range res.Messages {
		res.Messages[i].NextAttemptAt = nil
		res.Messages[i].TaskID = ""
	}
	return nil
}

// ownBatch reports whether by made the batch: the same person (a console user, or the
// creator of the API key acting, with any of their keys), the same key, or, for a batch
// recorded before its makers were, the same actor.
func (d *Dispatcher) ownBatch(ctx context.Context, b *models.Batch, by audit.Actor) (bool, error) {
	if by.Name == b.Actor || (by.APIKeyID != 0 && b.APIKeyID != nil && *b.APIKeyID == by.APIKeyID) {
		return true, nil
	}
	makers := b.Makers
	switch {
	case len(makers) > 0:
	case b.APIKeyID != nil: // recorded before its makers were
		k, err := d.store.Access().APIKeyByID(ctx, *b.APIKeyID)
		if err != nil && !errors.Is(err, kernel.ErrNotFound) {
			return false, err
		}
		if k != nil {
			makers = templates.StringList{k.CreatedBy}
		}
	case b.Source == "console":
		makers = templates.StringList{b.Actor}
	}
	return by.Person != "" && slices.Contains(makers, by.Person), nil
}

// Approve releases a batch's held messages: due at their send_at, or now when that has
// passed, in chunk tasks. ErrOwnBatch refuses a maker of the batch (see ownBatch);
// kernel.ErrStateChanged means the batch was not awaiting approval (decided already, or
// never needed it).
func (d *Dispatcher) Approve(ctx context.Context, by audit.Actor, b *models.Batch) error {
	if own, err := d.ownBatch(ctx, b, by); err != nil || own {
		return cmp.Or(err, error(ErrOwnBatch))
	}
	if b.Approval != models.ApprovalAwaiting {
		return kernel.ErrStateChanged
	}
	ids, err := d.store.Intake().AwaitingMessageIDs(ctx, b.ID)
	if err != nil {
		return err
	}
	now := d.now()
	due := now
	if b.SendAt != nil && b.SendAt.After(now) {
		due = b.SendAt.UTC()
	}
	jobs := tasks.Chunk(ids, b.Priority, due, func(_ string, k int) string { return tasks.ChunkTaskID(b.ID, k) })
	chunks := make([]models.ChunkAssignment, len(jobs))
	for i, j := range jobs {
		chunks[i] = models.ChunkAssignment{TaskID: j.TaskID, MessageIDs: j.MessageIDs}
	}
	return d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := tx.Intake().ApproveBatch(ctx, b.ID, by.Name, now, due, chunks); err != nil {
			return err
		}
		if err := d.alerts.StartHeld(ctx, tx, ch, b); err != nil {
			return err
		}
		ch.Audit("batch.approve", "batch", b.ID, audit.Params{"released": strconv.Itoa(len(ids)), "maker": b.Actor})
		ch.After(func() {
			d.enqueue(ctx, jobs)
			d.FallBackSoon() // the people without an address on the batch's platform
		})
		return nil
	})
}

// Reject cancels a batch's held messages with the reason. ErrOwnBatch refuses a maker
// (who may cancel the messages one by one instead); kernel.ErrStateChanged means the
// batch was not awaiting approval. A reason left empty, or too long, is a
// *kernel.FieldError naming reason.
func (d *Dispatcher) Reject(ctx context.Context, by audit.Actor, b *models.Batch, reason string) (int, error) {
	if own, err := d.ownBatch(ctx, b, by); err != nil || own {
		return 0, cmp.Or(err, error(ErrOwnBatch))
	}
	reason, err := kernel.CheckReason(reason)
	if err != nil {
		return 0, err
	}
	var n int
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		var err error
		if n, err = tx.Intake().RejectBatch(ctx, b.ID, by.Name, reason, d.now()); err != nil {
			return err
		}
		if err := d.alerts.EndRejected(ctx, tx, ch, by, b.ID, reason); err != nil {
			return err
		}
		ch.AuditDetail("batch.reject", "batch", b.ID, reason, audit.Params{"cancelled": strconv.Itoa(n), "maker": b.Actor})
		if b.APIKeyID != nil {
			ch.After(func() { d.callbacks.Kick(*b.APIKeyID) })
		}
		return nil
	})
	return n, err
}

// SetApprovalThreshold changes the number of accepted recipients above which a batch
// waits for approval (0: off), audited with the old and new value. This process applies
// it at once; others within thresholdTTL.
func (d *Dispatcher) SetApprovalThreshold(ctx context.Context, by audit.Actor, n int) error {
	return d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		old, err := tx.Intake().ApprovalThreshold(ctx)
		if err != nil {
			return err
		}
		if err := tx.Intake().SetApprovalThreshold(ctx, n, by.Name); err != nil {
			return err
		}
		ch.AuditDetail("settings.update", "setting", models.SettingApprovalThreshold, strconv.Itoa(n),
			audit.Params{"name": models.SettingApprovalThreshold, "old": strconv.Itoa(old), "new": strconv.Itoa(n)})
		ch.After(d.ForgetThreshold)
		return nil
	})
}
