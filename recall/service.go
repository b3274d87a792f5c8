package recall

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"herald/audit"
	"herald/channels"
	"herald/delivery"
	"herald/kernel"
	"herald/models"
)

// Recall takes back a notice sent by mistake. A sent message is recalled on its
// platform, within the platform's recall window (channels.RecallWindow), by the
// provider message id the send returned; a message not sent yet is cancelled instead.
// A batch recall for more people than the approval threshold waits, as a large send
// does, for another person to approve it.

// Recall outcomes, as a batch recall counts them and a single recall's error names them.
const (
	RecallRecalled       = "recalled"
	RecallCancelled      = "cancelled"
	RecallUnsupported    = "recall_unsupported"
	RecallWindowPassed   = "recall_window_passed"
	RecallFailed         = "failed"
	RecallAwaitsApproval = "awaiting_approval"
	// RecallRequestAwaiting and RecallRequestRejected refuse one message's recall by the
	// person whose recall of its whole batch awaits approval, or was rejected.
	RecallRequestAwaiting = "recall_request_awaiting"
	RecallRequestRejected = "recall_request_rejected"
)

// RecallError is a recall that could not happen: Code is RecallUnsupported,
// RecallWindowPassed, RecallRequestAwaiting or RecallRequestRejected (Request is then
// the batch's recall request that stands in the way), or RecallFailed (the platform
// refused or could not be reached: Err says why). It unwraps to the domain error of
// its Code (recallRefusals), which the handlers answer with.
type RecallError struct {
	Code    string
	Err     error
	Request *RecallRequest
}

// args are the values of the error's catalog sentence (recall.error.<Code>): the
// request that stands in the way, if any.
func (e *RecallError) args() []any {
	if e.Request == nil {
		return nil
	}
	r := e.Request
	return []any{"Batch", r.BatchID, "Request", r.ID, "RequestedBy", r.RequestedBy, "DecidedBy", r.DecidedBy}
}

func (e *RecallError) Error() string {
	if e.Err != nil {
		return "recall: recall: " + e.Code + ": " + e.Err.Error()
	}
	return "recall: recall: " + e.Code
}

// Unwrap returns the domain error of the recall's Code, carrying its message's data,
// and the cause, if any.
func (e *RecallError) Unwrap() []error {
	var errs []error
	if refusal, ok := recallRefusals[e.Code]; ok {
		args := e.args()
		if e.Code == RecallFailed && e.Err != nil {
			args = []any{"Error", e.Err.Error()}
		}
		errs = append(errs, refusal.With(args...))
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// recallRefusals are the domain errors of the codes of a RecallError: refusals where
// the message or the platform stands in the way, and the platform's own refusal.
var recallRefusals = map[string]*kernel.DomainError{
	RecallUnsupported: kernel.Declare(kernel.DomainError{Kind: kernel.KindConflict, Code: RecallUnsupported, Key: "recall.error.recall_unsupported",
		Text: "recall: the platform cannot recall"}),
	RecallWindowPassed: kernel.Declare(kernel.DomainError{Kind: kernel.KindConflict, Code: RecallWindowPassed, Key: "recall.error.recall_window_passed",
		Text: "recall: the recall window has passed"}),
	RecallRequestAwaiting: kernel.Declare(kernel.DomainError{Kind: kernel.KindConflict, Code: RecallRequestAwaiting, Key: "recall.error.recall_request_awaiting",
		Text: "recall: a recall of the batch awaits approval"}),
	RecallRequestRejected: kernel.Declare(kernel.DomainError{Kind: kernel.KindConflict, Code: RecallRequestRejected, Key: "recall.error.recall_request_rejected",
		Text: "recall: a recall of the batch was rejected"}),
	RecallFailed: kernel.Declare(kernel.DomainError{Kind: kernel.KindUpstream, Code: "recall_failed", Key: "recall.error.failed",
		Text: "recall: the platform did not recall"}),
}

// ErrOwnRecall refuses the decision on a recall request by the person who asked for it.
var ErrOwnRecall = kernel.Declare(kernel.DomainError{Kind: kernel.KindForbidden, Code: "forbidden", Key: "recall.error.own_request",
	Text: "recall: the person who asked for a recall cannot decide on it"})

// ErrRecallExpired refuses the decision on a recall request whose time ran out (see
// recallDeadline): it is recorded expired, and a new request may be made.
var ErrRecallExpired = kernel.Declare(kernel.DomainError{Kind: kernel.KindConflict, Code: "recall_request_expired", Key: "recall.error.expired",
	Text: "recall: the recall request expired before anyone decided on it"})

// recallRequestLife bounds a recall request for a batch with no sent message still
// within its platform's recall window (nothing sent yet, say): the platforms' windows
// are 24 hours, so a message sent while the request waits passes its own no sooner.
const recallRequestLife = 24 * time.Hour

// recallConcurrency bounds the platform calls one batch recall makes at once: a recall
// is rare and the platforms limit their API calls, so a few in flight finish a batch of
// hundreds within seconds without crowding out the sends.
const recallConcurrency = 4

// RecallMessage recalls one message as by: a sent one on its platform (recalled, with
// recalled_at and recalled_by, audited, message.recalled to its callback key), one not
// sent yet is cancelled; either way an alert the message is a notice of ends
// (endRecalledAlert). It returns the message as it was read. A *RecallError says why
// the recall could not happen; kernel.ErrStateChanged that the message is in a state
// that has nothing to recall (stopped, cancelled, recalled, sending); kernel.ErrNotFound
// a message by may not see. A refused recall is audited (message.recall_refuse) with
// why.
//
// While by's recall of the message's whole batch awaits approval, or after it was
// rejected, by may not recall its messages one at a time (RecallRequestAwaiting,
// RecallRequestRejected): that would recall, one message after another, what a second
// person was asked to approve, or refused.
func (d *Retriever) RecallMessage(ctx context.Context, by audit.Actor, id string) (*models.Message, error) {
	m, err := d.messages.OwnMessage(ctx, by, id)
	if err != nil {
		return nil, err
	}
	if err := d.checkBatchRecall(ctx, by, m); err != nil {
		return m, d.refuseRecall(ctx, by, m, err)
	}
	_, err = d.recallOne(ctx, by, m, by.Name)
	var re *RecallError
	if (errors.As(err, &re) && re.Code != RecallFailed) || errors.Is(err, kernel.ErrStateChanged) {
		return m, d.refuseRecall(ctx, by, m, err)
	}
	return m, err
}

// checkBatchRecall refuses, as a *RecallError naming the request, a single message's
// recall by the person (or key) whose recall of its batch awaits approval or was
// rejected. A request that lapsed, was approved, or was asked for by someone else is no
// obstacle.
func (d *Retriever) checkBatchRecall(ctx context.Context, by audit.Actor, m *models.Message) error {
	r, err := Of(d.store).LatestRecallRequest(ctx, m.BatchID)
	if err != nil || r == nil || !r.AskedBy(by.Name, by.Person, by.APIKeyID) {
		return err
	}
	switch r.State(d.now()) {
	case RecallAwaiting:
		return &RecallError{Code: RecallRequestAwaiting, Request: r}
	case RecallRejected:
		return &RecallError{Code: RecallRequestRejected, Request: r}
	}
	return nil
}

// refuseRecall audits a single message's recall that could not happen (cause: a
// *RecallError or kernel.ErrStateChanged) and returns cause.
func (d *Retriever) refuseRecall(ctx context.Context, by audit.Actor, m *models.Message, cause error) error {
	reason := "invalid_state"
	p := m.AuditParams()
	p["platform"] = m.Platform
	if re, ok := errors.AsType[*RecallError](cause); ok {
		reason = re.Code
		if re.Request != nil {
			p["request"] = strconv.FormatInt(re.Request.ID, 10)
		}
	}
	p["reason"] = reason
	err := d.change(ctx, by, func(_ *models.Store, ch *audit.Change) error {
		ch.Audit("message.recall_refuse", "message", m.ID, p)
		return nil
	})
	return cmp.Or(err, cause)
}

// recallOne recalls or cancels one message and returns the outcome. recalledBy is who
// asked for the recall (an approver acts for the one who asked).
func (d *Retriever) recallOne(ctx context.Context, by audit.Actor, m *models.Message, recalledBy string) (string, error) {
	if slices.Contains(delivery.Cancellable, m.Status) {
		err := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
			if err := d.messages.CancelIn(ctx, tx, ch, m); err != nil {
				return err
			}
			ch.Audit("message.cancel", "message", m.ID, m.AuditParams())
			return d.alerts.EndRecalled(ctx, tx, ch, m, recalledBy)
		})
		if err != nil {
			return RecallFailed, err
		}
		return RecallCancelled, nil
	}
	if m.Status != models.StatusSent {
		return RecallFailed, fmt.Errorf("recall: recall message %s (%s): %w", m.ID, m.Status, kernel.ErrStateChanged)
	}
	window := channels.RecallWindow(m.Platform)
	if window <= 0 {
		return RecallUnsupported, &RecallError{Code: RecallUnsupported}
	}
	if m.SentAt == nil || d.now().Sub(*m.SentAt) > window {
		return RecallWindowPassed, &RecallError{Code: RecallWindowPassed}
	}
	recaller, err := d.recallerFor(ctx, m)
	if re := (*RecallError)(nil); errors.As(err, &re) {
		return re.Code, err
	}
	if err != nil {
		return RecallFailed, err
	}
	// Where the platform recalls the whole call (DingTalk, WeCom), the others it carried
	// are taken back with m: they are recorded recalled too.
	carried := []models.Message{*m}
	if channels.RecallsCall(m.Platform) && m.ProviderMessageID != "" {
		if carried, err = Of(d.store).SentInCall(ctx, m.BatchID, m.AccountID, m.ProviderMessageID); err != nil {
			return RecallFailed, err
		}
		if !slices.ContainsFunc(carried, func(c models.Message) bool { return c.ID == m.ID }) {
			carried = append(carried, *m) // no longer sent: its compare-and-set says so
		}
	}
	err = recaller.Recall(ctx, channels.Message{ID: m.ID, To: m.Address, MsgType: m.MsgType, Title: m.Subject, Content: m.Content},
		channels.Receipt{ProviderMessageID: m.ProviderMessageID})
	if err != nil {
		return RecallFailed, d.recordRecallFailure(ctx, by, m, err)
	}
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		for i := range carried {
			c := &carried[i]
			err := Of(tx).RecallMessage(ctx, c, recalledBy, d.now())
			if c.ID != m.ID && errors.Is(err, kernel.ErrStateChanged) {
				continue // recalled meanwhile by another request for the same call
			}
			if err != nil {
				return err
			}
			p := c.AuditParams()
			p["platform"] = c.Platform
			ch.Audit("message.recall", "message", c.ID, p)
			if c.CallbackKeyID != nil {
				if d.kicker != nil {
					key := *c.CallbackKeyID
					ch.After(func() { d.kicker.Kick(key) })
				}
			}
		}
		return d.alerts.EndRecalled(ctx, tx, ch, m, recalledBy)
	})
	if err != nil {
		return RecallFailed, err
	}
	return RecallRecalled, nil
}

// recallUnits splits a batch recall's targets into the messages recalled together: one
// platform call recalls a DingTalk task or a WeCom msgid for every message it carried,
// so those form one unit; every other message is a unit of its own.
func recallUnits(targets []models.Message) [][]*models.Message {
	var units [][]*models.Message
	byCall := map[string]int{}
	for i := range targets {
		m := &targets[i]
		if m.Status != models.StatusSent || m.ProviderMessageID == "" || !channels.RecallsCall(m.Platform) {
			units = append(units, []*models.Message{m})
			continue
		}
		key := strconv.FormatInt(m.AccountID, 10) + "/" + m.ProviderMessageID
		if u, ok := byCall[key]; ok {
			units[u] = append(units[u], m)
			continue
		}
		byCall[key] = len(units)
		units = append(units, []*models.Message{m})
	}
	return units
}

// recallerFor returns the adapter of the message's account, as a Recaller; a
// *RecallError with RecallUnsupported when it cannot recall.
func (d *Retriever) recallerFor(ctx context.Context, m *models.Message) (channels.Recaller, error) {
	if d.channels == nil {
		return nil, &RecallError{Code: RecallUnsupported, Err: errors.New("no platform adapters in this process")}
	}
	acct, err := d.store.Sending().AccountByID(ctx, m.AccountID)
	if err != nil {
		return nil, err
	}
	sender, err := d.channels.Sender(acct.Channel())
	if err != nil {
		return nil, &RecallError{Code: RecallFailed, Err: err}
	}
	recaller, ok := sender.(channels.Recaller)
	if !ok {
		return nil, &RecallError{Code: RecallUnsupported}
	}
	return recaller, nil
}

// recordRecallFailure audits a recall the platform refused (or that never reached it)
// and returns it as a *RecallError.
func (d *Retriever) recordRecallFailure(ctx context.Context, by audit.Actor, m *models.Message, cause error) error {
	ce := channels.Classify(cause)
	err := d.change(ctx, by, func(_ *models.Store, ch *audit.Change) error {
		p := m.AuditParams()
		p["platform"], p["error_class"] = m.Platform, string(ce.Class)
		ch.AuditDetail("message.recall_fail", "message", m.ID, cause.Error(), p)
		return nil
	})
	return cmp.Or(err, error(&RecallError{Code: RecallFailed, Err: cause}))
}

// BatchRecall is what a batch recall did: the counts per outcome, or, for more people
// than the approval threshold, the request now awaiting another person's approval.
type BatchRecall struct {
	Counts RecallCounts
	// AwaitingApproval is set when the recall waits for approval; People is how many
	// people it would reach.
	AwaitingApproval bool
	People           int
	// ExpiresAt is when the request awaiting approval lapses undecided.
	ExpiresAt *time.Time
}

// RecallBatch recalls every message of a batch as by (see RecallMessage for one): the
// messages not sent yet are cancelled, the sent ones recalled where their platform and
// its window allow. For more people than the approval threshold it records a recall
// request instead, which another person approves (ApproveRecall) or rejects
// (RejectRecall); asking again while one waits changes nothing. The batch recall is
// audited with its counts, each message's recall on its own.
func (d *Retriever) RecallBatch(ctx context.Context, by audit.Actor, batchID string) (BatchRecall, error) {
	b, err := d.messages.Batch(ctx, by, batchID)
	if err != nil {
		return BatchRecall{}, err
	}
	targets, err := Of(d.store).RecallTargets(ctx, b.ID)
	if err != nil {
		return BatchRecall{}, err
	}
	out := BatchRecall{People: len(targets)}
	if len(targets) == 0 {
		return out, nil
	}
	threshold, err := d.messages.ApprovalThreshold(ctx)
	if err != nil {
		return out, err
	}
	if threshold > 0 && len(targets) > threshold {
		r, err := d.requestRecall(ctx, by, b, targets)
		if err != nil {
			return out, err
		}
		out.AwaitingApproval, out.People, out.ExpiresAt = true, r.People, r.ExpiresAt
		return out, nil
	}
	out.Counts, err = d.recallAll(ctx, by, b, targets, by.Name, "")
	return out, err
}

// requestRecall records a batch recall that awaits approval, unless one awaits already,
// and returns the request awaiting. One that lapsed is recorded expired and replaced.
func (d *Retriever) requestRecall(ctx context.Context, by audit.Actor, b *models.Batch, targets []models.Message) (*RecallRequest, error) {
	latest, err := Of(d.store).LatestRecallRequest(ctx, b.ID)
	if err != nil {
		return nil, err
	}
	now := d.now()
	if latest != nil && latest.Status == RecallAwaiting {
		if !latest.Lapsed(now) {
			return latest, nil
		}
		if err := d.expireRecalls(ctx); err != nil {
			return nil, err
		}
	}
	expires := recallDeadline(targets, now)
	r := &RecallRequest{BatchID: b.ID, RequestedBy: by.Name, Requester: by.Person, People: len(targets), ExpiresAt: &expires}
	if by.APIKeyID != 0 {
		r.APIKeyID = &by.APIKeyID
	}
	return r, d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := Of(tx).CreateRecallRequest(ctx, r); err != nil {
			return err
		}
		ch.Audit("batch.recall_request", "batch", b.ID, audit.Params{"people": strconv.Itoa(len(targets)),
			"expires_at": r.ExpiresAt.Format(time.RFC3339)})
		return nil
	})
}

// recallDeadline is when a recall request for targets lapses: when the earliest of the
// sent messages still within its platform's recall window passes it. Approved later,
// the recall would fail for that message (recall_window_passed), and for every one sent
// before it, so a second person is not asked to approve what can no longer be done.
// Without such a message the request lasts recallRequestLife.
func recallDeadline(targets []models.Message, now time.Time) time.Time {
	deadline := now.Add(recallRequestLife)
	for _, m := range targets {
		window := channels.RecallWindow(m.Platform)
		if m.Status != models.StatusSent || m.SentAt == nil || window <= 0 {
			continue
		}
		if passes := m.SentAt.Add(window); passes.After(now) && passes.Before(deadline) {
			deadline = passes
		}
	}
	return deadline
}

// expireRecalls records the recall requests whose time ran out as expired, as the
// sweeper does each minute, so that one is never decided on past its expiry.
func (d *Retriever) expireRecalls(ctx context.Context) error {
	_, err := Of(d.store).ExpireRecallRequests(ctx, d.now())
	return err
}

// recallAll recalls targets with a few platform calls at a time and audits the batch
// recall with its counts (approvedBy names the approver of a recall request, if any).
func (d *Retriever) recallAll(ctx context.Context, by audit.Actor, b *models.Batch, targets []models.Message, recalledBy, approvedBy string) (RecallCounts, error) {
	var (
		mu     sync.Mutex
		counts RecallCounts
		wg     sync.WaitGroup
		slots  = make(chan struct{}, recallConcurrency)
	)
	for _, unit := range recallUnits(targets) {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			outcome, err := d.recallOne(ctx, by, unit[0], recalledBy)
			if err != nil && outcome == RecallFailed {
				d.log.Warn("recall failed", "message", unit[0].ID, "batch", b.ID, "err", err)
			}
			mu.Lock()
			for range unit {
				counts.Add(outcome)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	p := audit.Params{"recalled": strconv.Itoa(counts.Recalled), "cancelled": strconv.Itoa(counts.Cancelled),
		"unsupported": strconv.Itoa(counts.RecallUnsupported), "window_passed": strconv.Itoa(counts.RecallWindowPassed),
		"failed": strconv.Itoa(counts.Failed)}
	if approvedBy != "" {
		p["approved_by"] = approvedBy
	}
	err := d.change(ctx, by, func(_ *models.Store, ch *audit.Change) error {
		ch.Audit("batch.recall", "batch", b.ID, p)
		return nil
	})
	return counts, err
}

// pendingRecall returns the batch and its recall request awaiting a decision, as by may
// decide on it: kernel.ErrNotFound for a batch by may not see, kernel.ErrStateChanged
// when no request awaits, ErrRecallExpired when the latest one's time ran out (it is
// recorded expired if it was not yet), ErrOwnRecall for the person (or key) who asked.
func (d *Retriever) pendingRecall(ctx context.Context, by audit.Actor, batchID string) (*models.Batch, *RecallRequest, error) {
	b, err := d.messages.Batch(ctx, by, batchID)
	if err != nil {
		return nil, nil, err
	}
	r, err := Of(d.store).LatestRecallRequest(ctx, batchID)
	if err != nil {
		return nil, nil, err
	}
	if r != nil && r.Status == models.RecallExpired {
		return nil, nil, ErrRecallExpired
	}
	if r == nil || r.Status != RecallAwaiting {
		return nil, nil, kernel.ErrStateChanged
	}
	if r.Lapsed(d.now()) {
		return nil, nil, cmp.Or(d.expireRecalls(ctx), error(ErrRecallExpired))
	}
	if r.AskedBy(by.Name, by.Person, by.APIKeyID) {
		return nil, nil, ErrOwnRecall
	}
	return b, r, nil
}

// ApproveRecall approves the batch's recall request as by and runs it: the messages
// are recalled for the person who asked. ErrOwnRecall refuses that person;
// kernel.ErrStateChanged means no request awaits, ErrRecallExpired that its time ran
// out.
func (d *Retriever) ApproveRecall(ctx context.Context, by audit.Actor, batchID string) (RecallCounts, error) {
	b, r, err := d.pendingRecall(ctx, by, batchID)
	if err != nil {
		return RecallCounts{}, err
	}
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := Of(tx).DecideRecallRequest(ctx, r.ID, RecallApproved, by.Name, "", d.now()); err != nil {
			return err
		}
		ch.Audit("batch.recall_approve", "batch", b.ID, audit.Params{"people": strconv.Itoa(r.People), "requested_by": r.RequestedBy})
		return nil
	})
	if err != nil {
		return RecallCounts{}, err
	}
	targets, err := Of(d.store).RecallTargets(ctx, b.ID)
	if err != nil {
		return RecallCounts{}, err
	}
	counts, err := d.recallAll(ctx, by, b, targets, r.RequestedBy, by.Name)
	if err != nil {
		return counts, err
	}
	return counts, Of(d.store).RecordRecallResult(ctx, r.ID, counts)
}

// RejectRecall rejects the batch's recall request as by, with the reason: nothing is
// recalled. ErrOwnRecall refuses the person who asked; kernel.ErrStateChanged means no
// request awaits, ErrRecallExpired that its time ran out; a reason left empty or too
// long is a *kernel.FieldError naming reason.
func (d *Retriever) RejectRecall(ctx context.Context, by audit.Actor, batchID, reason string) error {
	_, r, err := d.pendingRecall(ctx, by, batchID)
	if err != nil {
		return err
	}
	reason, err = kernel.CheckReason(reason)
	if err != nil {
		return err
	}
	return d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := Of(tx).DecideRecallRequest(ctx, r.ID, RecallRejected, by.Name, reason, d.now()); err != nil {
			return err
		}
		ch.AuditDetail("batch.recall_reject", "batch", batchID, reason, audit.Params{"people": strconv.Itoa(r.People), "requested_by": r.RequestedBy})
		return nil
	})
}

// RecallRequest returns the batch's latest recall request (nil for none), as by may see
// it.
func (d *Retriever) RecallRequest(ctx context.Context, by audit.Actor, batchID string) (*RecallRequest, error) {
	if err := d.store.CheckOwn(ctx, by.OwnKey(), batchID); err != nil {
		return nil, err
	}
	return Of(d.store).LatestRecallRequest(ctx, batchID)
}
