package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"herald/models"
	"herald/tasks"
)

// Maker-checker: a batch for more people than the approval threshold is stored with its
// messages held (pending, never due) until another person approves it, which releases
// them, or rejects it, which cancels them. Nobody decides on their own batch: a console
// user on a batch they composed, an API key on a batch it sent.

// MaxReasonLen bounds a rejection's reason, in characters.
const MaxReasonLen = 200

// ErrOwnBatch refuses a decision by the batch's maker.
var ErrOwnBatch = errors.New("dispatch: the maker of a batch cannot decide on it")

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
	n, err := d.Store.ApprovalThreshold(ctx)
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

// holdForApproval marks a planned batch as awaiting approval when it is for more people
// than the threshold, holding its messages: no due time, no task.
func (d *Dispatcher) holdForApproval(ctx context.Context, res *Result) error {
	n, err := d.approvalThreshold(ctx)
	if err != nil || n == 0 || res.Batch.Accepted <= n {
		return err
	}
	res.Batch.Approval = models.ApprovalAwaiting
	for i := range res.Messages {
		res.Messages[i].NextAttemptAt = nil
		res.Messages[i].TaskID = ""
	}
	return nil
}

// Decider is who approves or rejects: a console user (Actor is the username) or an API
// key (Actor is apikey:<name>), and the address the decision came from.
type Decider struct {
	Actor     string
	ActorType string // "user" or "api_key"
	IP        string
}

// audit is the audit entry of a decision.
func (by Decider) audit(action string, b *models.Batch, detail string) models.AuditEntry {
	return models.AuditEntry{Actor: by.Actor, ActorType: by.ActorType, Action: action, TargetType: "batch", TargetID: b.ID, Detail: detail, IP: by.IP}
}

// Approve releases a batch's held messages: due at their send_at, or now when that has
// passed, in chunk tasks. ErrOwnBatch refuses the maker; models.ErrStateChanged means the
// batch was not awaiting approval (decided already, or never needed it).
func (d *Dispatcher) Approve(ctx context.Context, b *models.Batch, by Decider) error {
	if by.Actor == b.Actor {
		return ErrOwnBatch
	}
	if b.Approval != models.ApprovalAwaiting {
		return models.ErrStateChanged
	}
	ids, err := d.Store.AwaitingMessageIDs(ctx, b.ID)
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
	audit := by.audit("batch.approve", b, fmt.Sprintf("%d messages released", len(ids)))
	if err := d.Store.ApproveBatch(ctx, b.ID, by.Actor, now, due, chunks, audit); err != nil {
		return err
	}
	d.enqueue(ctx, jobs)
	d.FallBackSoon() // the people without an address on the batch's platform
	return nil
}

// Reject cancels a batch's held messages with the reason. ErrOwnBatch refuses the maker
// (who may cancel the messages one by one instead); models.ErrStateChanged means the
// batch was not awaiting approval.
func (d *Dispatcher) Reject(ctx context.Context, b *models.Batch, by Decider, reason string) (int, error) {
	if by.Actor == b.Actor {
		return 0, ErrOwnBatch
	}
	reason = strings.TrimSpace(reason)
	if err := models.CheckText("reason", reason, false); err != nil {
		return 0, err
	}
	if reason == "" || utf8.RuneCountInString(reason) > MaxReasonLen {
		return 0, models.Invalid("reason", "approvals.error.reason", "Max", MaxReasonLen)
	}
	n, err := d.Store.RejectBatch(ctx, b.ID, by.Actor, reason, d.now(), by.audit("batch.reject", b, reason))
	if err == nil && b.APIKeyID != nil {
		d.Callbacks.Kick(*b.APIKeyID)
	}
	return n, err
}
