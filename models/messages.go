package models

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"herald/audit"
	"herald/channels"
	"herald/delivery"
	"herald/kernel"
	"herald/templates"
)

// Status is a message's delivery state; the states and the moves allowed between them
// are delivery's (delivery/states.go), the queries that make the moves are here.
type Status = delivery.Status

// The message states.
const (
	StatusPending   = delivery.Pending
	StatusHeld      = delivery.Held
	StatusSending   = delivery.Sending
	StatusSent      = delivery.Sent
	StatusFailed    = delivery.Failed
	StatusStopped   = delivery.Stopped
	StatusCancelled = delivery.Cancelled
	StatusRecalled  = delivery.Recalled
	StatusDigested  = delivery.Digested
)

// Priority is a message's priority (delivery/priority.go).
type Priority = delivery.Priority

// The priorities.
const (
	PriorityHigh   = delivery.High
	PriorityNormal = delivery.Normal
	PriorityLow    = delivery.Low
)

// Priorities lists the priorities, highest first.
var Priorities = delivery.Priorities

// AllStatuses lists the states in lifecycle order, for display.
var AllStatuses = delivery.Statuses

// NewID returns a new time-ordered id (UUIDv7) for batches and messages, so inserts
// append to the primary key and ids sort by creation.
func NewID() string { return uuid.Must(uuid.NewV7()).String() }

// Reason is a recipient left out of a batch and why.
type Reason struct {
	Recipient string `json:"recipient"`
	Reason    string `json:"reason"`
}

// Reasons is a list of Reason stored as JSON in one column.
type Reasons []Reason

// Value implements driver.Valuer.
func (r Reasons) Value() (driver.Value, error) {
	if r == nil {
		r = Reasons{}
	}
	b, err := json.Marshal([]Reason(r))
	return string(b), err
}

// Scan implements sql.Scanner.
func (r *Reasons) Scan(src any) error { return kernel.ScanJSON(src, r) }

// SourceReminder is the source of a duty reminder's batch.
const SourceReminder = "reminder"

// Batch is one intake: a request from the console or the API to notify some people, or
// a duty reminder.
type Batch struct {
	ID             string
	Source         string // "console", "api" or SourceReminder
	Actor          string
	APIKeyID       *int64 `gorm:"column:api_key_id"`
	IdempotencyKey *string
	RequestHash    string
	Platform       string
	AccountID      int64
	TemplateID     *int64
	Priority       Priority
	SendAt         *time.Time
	ToOnDuty       bool
	Requested      int
	Accepted       int
	// CallbackOpen counts the messages of a callback key not final yet: batch.completed
	// is sent when it reaches zero.
	CallbackOpen int
	// Variables are the request's template variables, kept when a fallback may need to
	// render the template for another platform.
	Variables VarMap
	// TemplateContent is the template as the batch was created (and approved) with,
	// kept beside Variables: fallback messages render from it, not from the template as
	// it is now.
	TemplateContent *TemplateContent
	// Makers are the people who made the batch (console usernames): the user who
	// composed it, the creator of the API key that sent it, or whoever last set up the
	// duty reminder it is. None of them may approve it.
	Makers        templates.StringList
	SkippedCount  int
	RejectedCount int
	Skipped       Reasons
	Rejected      Reasons
	CreatedAt     time.Time
	// Approval is "" for a batch that needed none, else ApprovalAwaiting, ApprovalApproved
	// or ApprovalRejected (approvals.go); DecidedBy names who decided.
	Approval     string
	DecidedBy    string
	DecidedAt    *time.Time
	DecisionNote string
}

// Message is one recipient on one account: what to send and how far delivery got.
type Message struct {
	ID          string
	BatchID     string
	RecipientID int64
	AccountID   int64
	Platform    string
	Address     string
	MsgType     string
	Subject     string
	Content     string
	// ContentHTML is the HTML alternative rendered for an email ("" for none).
	ContentHTML string `gorm:"column:content_html"`
	Priority    Priority
	Status      Status
	Attempts    int
	MaxAttempts int
	// ClassRetries counts consecutive failures of the class in ErrorClass, for classes
	// whose retries are bounded apart from max_attempts (rate_limited, auth).
	ClassRetries  int
	SendAt        time.Time
	NextAttemptAt *time.Time
	// LeaseUntil is when the claim of a sending message ends unless its worker renews it;
	// it means nothing in any other status (a new message's lease ended when it was
	// written, see unclaimed).
	LeaseUntil *time.Time
	// ClaimToken is unique per claim: it tells a worker whether it holds the message.
	ClaimToken        string
	ErrorClass        string
	LastError         string
	ProviderMessageID string
	// TaskID is the Asynq task that carries the message: its own, or a chunk task it
	// shares with other messages of its batch (tasks.SendTaskID, tasks.ChunkTaskID).
	TaskID string
	// CallbackKeyID is the API key that hears of the message's outcome (nil for none).
	CallbackKeyID *int64
	// Fallback lists the platforms still to try, comma-separated, when the message
	// stops; FallbackDue marks a stopped message whose next one is not made yet;
	// FallbackOf and FallbackNext link the messages of a chain (fallback.go).
	Fallback     string
	FallbackDue  bool
	FallbackOf   *string
	FallbackNext *string
	// TemplateVersion is the version of the template the content was rendered from (nil:
	// no template, or sent before versions existed).
	TemplateVersion *int
	CreatedAt       time.Time
	UpdatedAt       time.Time
	SentAt          *time.Time
	// RecalledAt and RecalledBy say when and by whom a recalled message was taken back.
	RecalledAt *time.Time
	RecalledBy string
	// AlertID is the alert the message notifies of (nil for none).
	AlertID *int64
	// DigestSlot is the digest group a notice waits in ("" for none; DigestSlotOf),
	// DigestDueAt when its window closes and DigestMax the most notices it lets gather
	// (digests.go). DigestMessageID is the message that carried a digested notice.
	DigestSlot      string
	DigestDueAt     *time.Time
	DigestMax       int
	DigestMessageID *string
	// ChatGroupID is the chat group a group post goes to (nil for a message to a
	// person, whose RecipientID then names them); Mentions are the people it @s, as
	// JSON (MentionsOf), "" for none.
	ChatGroupID *int64
	Mentions    string
	// ProviderTemplate is the provider template an SMS or a call is sent as, with its
	// parameters rendered for the person, as JSON (ProviderTemplateOf), "" for none.
	ProviderTemplate string
}

// providerTemplate is the JSON of Message.ProviderTemplate.
type providerTemplate struct {
	Code   string           `json:"code"`
	Params []channels.Param `json:"params"`
}

// ProviderTemplateOf reads a message's ProviderTemplate: the code and the parameters
// ("" and nil for none).
func ProviderTemplateOf(s string) (code string, params []channels.Param) {
	var pt providerTemplate
	if s == "" || json.Unmarshal([]byte(s), &pt) != nil {
		return "", nil
	}
	return pt.Code, pt.Params
}

// ProviderTemplateText is the ProviderTemplate column's text for a code and its
// parameters ("" for no code).
func ProviderTemplateText(code string, params []channels.Param) string {
	if code == "" {
		return ""
	}
	if params == nil {
		params = []channels.Param{}
	}
	b, _ := json.Marshal(providerTemplate{Code: code, Params: params})
	return string(b)
}

// MentionsOf reads a message's Mentions; nil for none or for text that is not a list
// of mentions.
func MentionsOf(s string) []channels.Mention {
	if s == "" {
		return nil
	}
	var out []channels.Mention
	if json.Unmarshal([]byte(s), &out) != nil {
		return nil
	}
	return out
}

// MentionsText is the Mentions column's text for a list of mentions ("" for none).
func MentionsText(ms []channels.Mention) string {
	if len(ms) == 0 {
		return ""
	}
	b, _ := json.Marshal(ms)
	return string(b)
}

// BatchExtras are written in a batch's transaction: the answer to replay for an
// idempotent request, and the audit entry of the intake.
type BatchExtras struct {
	Idem  *IdemCompletion
	Audit *audit.Entry
	// Reminder, when set, records the duty reminder this batch is: a date is reminded
	// once, so a second batch for it fails with ErrDuplicate.
	Reminder *DutyReminder
	// DailyContents, when set, records notices of a platform that delivers one content
	// to one person once a day; one recorded already fails the batch with
	// ErrContentTaken.
	DailyContents []DailyContent
}

// stepwise reports whether the extras need each statement's outcome as it runs (an
// idempotent answer's UPDATE must change its row; a reminder or a daily content must
// not be taken), so their transaction cannot go as one script (createBatchesOneTrip).
// Only the audit entry is written blind. An extra added to BatchExtras belongs here
// unless it is written blind too: TestStepwiseExtras sets each one.
func (x *BatchExtras) stepwise() bool {
	return x != nil && (x.Idem != nil || x.Reminder != nil || len(x.DailyContents) > 0)
}

// CreateBatch writes a batch and its messages in one transaction: either all rows exist
// afterwards or none do. The extras (may be nil) commit with them, so a crash can never
// leave a batch without its replayable answer or its audit entry. A transaction that
// loses a deadlock runs again: concurrent intakes inserting the same daily contents
// can deadlock on the unique key, and the next run finds the content taken.
func (s *Store) CreateBatch(ctx context.Context, b *Batch, msgs []Message, extras *BatchExtras) error {
	return s.txRetry(ctx, func(tx *gorm.DB) error {
		if extras != nil && extras.Idem != nil {
			if err := completeIdempotent(tx, extras.Idem, b.ID); err != nil {
				return err
			}
		}
		if extras != nil && extras.Audit != nil {
			e := *extras.Audit
			e.At = kernel.Now()
			if err := audit.Insert(kernel.OnTx(tx), &e); err != nil {
				return fmt.Errorf("models: audit batch: %w", err)
			}
		}
		if extras != nil && extras.Reminder != nil {
			if err := createReminder(tx, extras.Reminder); err != nil {
				return err
			}
		}
		if extras != nil {
			if err := createDailyContents(tx, extras.DailyContents); err != nil {
				return err
			}
		}
		countCallbacks(b, msgs)
		if err := insertBatches(kernel.OnTx(tx), b); err != nil {
			if kernel.IsDuplicate(err) {
				return fmt.Errorf("models: create batch: %w", kernel.ErrDuplicate)
			}
			return fmt.Errorf("models: create batch: %w", err)
		}
		if len(msgs) == 0 {
			return nil
		}
		if err := insertMessages(kernel.OnTx(tx), msgs); err != nil {
			return fmt.Errorf("models: create messages of batch %s: %w", b.ID, err)
		}
		return recordCreatedFinal(tx, msgs)
	})
}

// recordCreatedFinal writes the events of messages created final: people without an
// address on the batch's platform, stopped at once to fall back.
func recordCreatedFinal(tx *gorm.DB, msgs []Message) error {
	var finals []finalMessage
	for i := range msgs {
		if f, ok := finalOf(&msgs[i], msgs[i].Status, msgs[i].ErrorClass); ok {
			finals = append(finals, f)
		}
	}
	return recordFinal(tx, finals, kernel.Now())
}

// countCallbacks sets how many of a batch's messages a callback key waits for.
func countCallbacks(b *Batch, msgs []Message) {
	b.CallbackOpen = 0
	for i := range msgs {
		if msgs[i].CallbackKeyID != nil {
			b.CallbackOpen++
		}
	}
}

// NewBatch is one intake for CreateBatches: a batch, its messages and its extras.
type NewBatch struct {
	Batch    *Batch
	Messages []Message
	Extras   *BatchExtras
}

// CreateBatches writes several intakes in one transaction, with one INSERT per table for
// all of them (and one UPDATE per idempotent answer): many concurrent requests then
// cost the database one commit. On MySQL, intakes with nothing but an audit entry beside
// their rows go in one call (createBatchesOneTrip), a lone one too. Each intake is still
// all or nothing: when the shared transaction fails, each is written again on its own
// (CreateBatch), so one that cannot be written fails alone. It returns one error per
// intake.
func (s *Store) CreateBatches(ctx context.Context, items []NewBatch) []error {
	errs := make([]error, len(items))
	err := errNotOneTrip
	if s.oneTrip.usable() {
		err = s.createBatchesOneTrip(ctx, items)
	}
	if err == errNotOneTrip && len(items) > 1 {
		err = s.tx(ctx, func(tx *gorm.DB) error {
			for _, it := range items {
				x := it.Extras
				if x == nil {
					continue
				}
				if x.Idem != nil {
					if err := completeIdempotent(tx, x.Idem, it.Batch.ID); err != nil {
						return err
					}
				}
				if x.Reminder != nil {
					if err := createReminder(tx, x.Reminder); err != nil {
						return err
					}
				}
				if err := createDailyContents(tx, x.DailyContents); err != nil {
					return err
				}
			}
			msgs, err := insertIntakes(kernel.OnTx(tx), items)
			if err != nil {
				return err
			}
			return recordCreatedFinal(tx, msgs)
		})
	}
	if err != nil {
		for i, it := range items {
			errs[i] = s.CreateBatch(ctx, it.Batch, it.Messages, it.Extras)
		}
	}
	return errs
}

// insertIntakes writes the audit entries, batches and messages of intakes through w,
// with one INSERT per table for all of them, and returns their messages.
func insertIntakes(w kernel.RowWriter, items []NewBatch) ([]Message, error) {
	var audits []*audit.Entry
	batches := make([]*Batch, 0, len(items))
	var msgs []Message
	now := kernel.Now()
	for _, it := range items {
		if x := it.Extras; x != nil && x.Audit != nil {
			e := *x.Audit
			e.At = now
			audits = append(audits, &e)
		}
		countCallbacks(it.Batch, it.Messages)
		batches = append(batches, it.Batch)
		msgs = append(msgs, it.Messages...)
	}
	if err := audit.Insert(w, audits...); err != nil {
		return nil, fmt.Errorf("models: audit batches: %w", err)
	}
	if err := insertBatches(w, batches...); err != nil {
		return nil, fmt.Errorf("models: create batches: %w", err)
	}
	if err := insertMessages(w, msgs); err != nil {
		return nil, fmt.Errorf("models: create messages: %w", err)
	}
	return msgs, nil
}

// BatchByID returns one batch.
func (s *Store) BatchByID(ctx context.Context, id string) (*Batch, error) {
	var b Batch
	if err := s.reader(ctx).Where("id = ?", id).First(&b).Error; err != nil {
		return nil, fmt.Errorf("models: batch %s: %w", id, kernel.NotFound(err))
	}
	return &b, nil
}

// MessageByID returns one message.
func (s *Store) MessageByID(ctx context.Context, id string) (*Message, error) {
	var m Message
	if err := s.reader(ctx).Where("id = ?", id).First(&m).Error; err != nil {
		return nil, fmt.Errorf("models: message %s: %w", id, kernel.NotFound(err))
	}
	return &m, nil
}

// recipientColumns read a message's recipient for display: the person's name and
// external id, or for a post to a chat group the group's name (joinChatGroups).
const recipientColumns = "COALESCE(r.name, g.name, '') AS recipient_name, COALESCE(r.external_id, '') AS recipient_external_id"

// joinChatGroups joins the chat group a post went to, as g.
const joinChatGroups = "LEFT JOIN chat_groups g ON g.id = m.chat_group_id"

// BatchMessage is a message of a batch with the name of its recipient (or of the chat
// group it was posted to), for display.
type BatchMessage struct {
	Message
	RecipientName       string
	RecipientExternalID string
}

// MessagesOfBatch lists a batch's messages with their recipients, at most limit of them.
func (s *Store) MessagesOfBatch(ctx context.Context, batchID string, limit int) ([]BatchMessage, error) {
	var out []BatchMessage
	err := s.reader(ctx).Table("messages AS m").
		Select("m.*, "+recipientColumns).
		Joins("LEFT JOIN recipients r ON r.id = m.recipient_id").Joins(joinChatGroups).
		Where("m.batch_id = ?", batchID).Order("recipient_name, m.id").Limit(limit).
		Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: messages of batch %s: %w", batchID, err)
	}
	return out, nil
}

// BatchCounts are a batch's messages counted by status, the people with a sent message
// on any platform of their fallback chain (Reached), and the stopped messages whose
// fallback is not made yet (Falling).
type BatchCounts struct {
	ByStatus         map[Status]int
	Reached, Falling int
}

// BatchStatusCounts counts a batch's messages, in one query.
func (s *Store) BatchStatusCounts(ctx context.Context, batchID string) (BatchCounts, error) {
	var rows []struct {
		Status  Status
		N       int
		People  int
		Falling int
	}
	err := s.reader(ctx).Model(&Message{}).
		Select("status, COUNT(*) AS n, COUNT(DISTINCT recipient_id) AS people, COALESCE(SUM(CASE WHEN fallback_due THEN 1 ELSE 0 END), 0) AS falling").
		Where("batch_id = ?", batchID).Group("status").Scan(&rows).Error
	if err != nil {
		return BatchCounts{}, fmt.Errorf("models: count batch %s: %w", batchID, err)
	}
	out := BatchCounts{ByStatus: make(map[Status]int, len(rows))}
	for _, r := range rows {
		out.ByStatus[r.Status] = r.N
		out.Falling += r.Falling
		if r.Status == StatusSent {
			out.Reached = r.People
		}
	}
	return out, nil
}

// RecentBatches lists the newest batches.
func (s *Store) RecentBatches(ctx context.Context, limit int) ([]Batch, error) {
	var out []Batch
	if err := s.reader(ctx).Order("created_at DESC, id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("models: recent batches: %w", err)
	}
	return out, nil
}

// claimEarly lets a claim succeed slightly before next_attempt_at: Asynq keeps ProcessAt
// in whole seconds and may run a task up to a second before the time Herald asked for.
// The sender then waits for next_attempt_at itself (tasks.Sender.ProcessTask), so a
// message is never sent before it is due.
const claimEarly = time.Second

// messagesByID names the messages table for the hot writes that pick their rows by
// primary key: claims, finishes, lease renewals. Without the hint MySQL's optimizer
// weighs the indexes on their other conditions (status, next_attempt_at) for every
// statement, diving into each: in a fan-out drain that was 17 % of the server's CPU,
// nearly as much as changing the rows. SQLite's planner takes the key unasked.
func messagesByID(tx *gorm.DB) string {
	if tx.Dialector.Name() == "mysql" {
		return "messages FORCE INDEX (PRIMARY)"
	}
	return "messages"
}

// ClaimForSending moves a due pending or failed message to sending, with a lease until
// leaseUntil, and returns it. A sending message whose lease ran out (its worker died) is
// taken over the same way. ErrStateChanged means it was not claimable: claimed by a live
// worker, finished, cancelled, or not due yet (the returned message, if any, says which).
func (s *Store) ClaimForSending(ctx context.Context, id string, leaseUntil time.Time) (*Message, error) {
	found, token, err := s.ClaimMany(ctx, []string{id}, leaseUntil)
	if err != nil {
		return nil, err
	}
	m := found[id]
	switch {
	case m == nil:
		return nil, fmt.Errorf("models: message %s: %w", id, kernel.ErrNotFound)
	case !m.Claimed(token):
		return m, kernel.ErrStateChanged
	}
	return m, nil
}

// Outcome is the result of one delivery attempt, as the worker decided it.
type Outcome struct {
	Status            Status // sent, failed (retry at NextAttemptAt), stopped, or pending (throttled)
	ErrorClass        string
	Error             string
	ProviderCode      string
	ProviderMessageID string
	NextAttemptAt     *time.Time
	// CountsAttempt is false for outcomes that must not use up an attempt (throttling).
	CountsAttempt bool
	// ClassRetries is the new count of consecutive failures of ErrorClass.
	ClassRetries int
	// Called is true when a provider call was made, which is recorded in attempts.
	Called bool
	// Unknown is true when the platform may or may not have taken the message: the
	// attempt's outcome is AttemptUnknown.
	Unknown   bool
	StartedAt time.Time
	Duration  time.Duration
	// TaskID, when set, is the task that carries the message from now on: a message that
	// must wait inside a chunk moves to a task of its own.
	TaskID string
}

// FinishAttempt records an attempt's outcome on a message the caller holds in sending,
// and the attempt row when a provider call was made, in one transaction. The claim's
// token fences it: a worker whose lease was taken over cannot overwrite the state.
func (s *Store) FinishAttempt(ctx context.Context, m *Message, o Outcome) error {
	return s.FinishAttempts(ctx, []Finish{{Message: m, Outcome: o}})[0]
}

// Finish is one message's attempt outcome, for FinishAttempts.
type Finish struct {
	Message *Message
	Outcome Outcome
}

// FinishAttempts records many outcomes in one transaction: one commit (and one log
// flush) for a whole batch instead of one per message, which is what lets a worker keep
// up with thousands of messages a second. It returns one error per item: an item whose
// message is no longer held gets ErrStateChanged and does not block the others; a
// database failure fails them all, leaving the messages to their leases.
func (s *Store) FinishAttempts(ctx context.Context, items []Finish) []error {
	errs := make([]error, len(items))
	var attempts []Attempt
	// Rows are locked in id order, the order lease renewals lock them in; a deadlock
	// with another transaction all the same (the sent rows are updated after the
	// others) runs the batch again rather than leave claims to expire.
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(items[a].Message.ID, items[b].Message.ID) })
	err := s.txRetry(ctx, func(tx *gorm.DB) error {
		attempts = attempts[:0]
		clear(errs)
		now := kernel.Now()
		var sent []int
		var finals []finalMessage
		for _, i := range order {
			it := items[i]
			if it.Outcome.Status == StatusSent && it.Outcome.CountsAttempt && it.Outcome.Called {
				sent = append(sent, i)
				continue
			}
			ok, err := finishOne(tx, it, now)
			if err != nil {
				return err
			}
			if !ok {
				errs[i] = fmt.Errorf("models: finish message %s: %w", it.Message.ID, kernel.ErrStateChanged)
				continue
			}
			if it.Outcome.Called {
				attempts = append(attempts, attemptRow(it))
			}
			if f, ok := finalOf(it.Message, it.Outcome.Status, it.Outcome.ErrorClass); ok {
				finals = append(finals, f)
			}
		}
		if len(sent) > 0 {
			done, err := finishSent(tx, items, sent, now)
			if err != nil {
				return err
			}
			for _, i := range sent {
				if !done[items[i].Message.ID] {
					errs[i] = fmt.Errorf("models: finish message %s: %w", items[i].Message.ID, kernel.ErrStateChanged)
					continue
				}
				attempts = append(attempts, attemptRow(items[i]))
				if f, ok := finalOf(items[i].Message, StatusSent, ""); ok {
					finals = append(finals, f)
				}
			}
		}
		if err := recordFinal(tx, finals, now); err != nil {
			return err
		}
		if len(attempts) > 0 {
			if err := insertAttempts(tx, attempts); err != nil {
				return fmt.Errorf("models: record attempts: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// finishOne records one outcome with a fenced UPDATE and reports whether it held.
func finishOne(tx *gorm.DB, it Finish, now time.Time) (bool, error) {
	m, o := it.Message, it.Outcome
	n := m.Attempts
	if o.CountsAttempt {
		n++
	}
	upd := map[string]any{
		"status": o.Status, "attempts": n, "lease_until": nil, "updated_at": now,
		"error_class": o.ErrorClass, "last_error": kernel.Truncate(o.Error, 1000),
		"next_attempt_at": o.NextAttemptAt, "class_retries": o.ClassRetries,
	}
	if o.Status == StatusSent {
		upd["sent_at"] = now
		upd["provider_message_id"] = kernel.Truncate(o.ProviderMessageID, 128)
	}
	if o.Status == StatusStopped && m.Fallback != "" {
		upd["fallback_due"] = true
	}
	if o.TaskID != "" {
		upd["task_id"] = o.TaskID
	}
	res := tx.Table(messagesByID(tx)).Where("id = ? AND status = ? AND claim_token = ?", m.ID, StatusSending, m.ClaimToken).Updates(upd)
	if res.Error != nil {
		return false, fmt.Errorf("models: finish message %s: %w", m.ID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// finishSent marks many delivered messages sent with one UPDATE, each fenced by its own
// claim token, and returns which ones it changed. Successes are the common case; one
// statement for a batch of them is what keeps the database off the critical path. The
// fence is a list of (id, token) pairs, which MySQL searches by halves for each row; a
// CASE would compare each row with every message of the batch.
func finishSent(tx *gorm.DB, items []Finish, idx []int, now time.Time) (map[string]bool, error) {
	var fence, provider strings.Builder
	ids := make([]string, 0, len(idx))
	var fenceArgs, providerArgs []any
	fence.WriteString("(id, claim_token) IN (")
	provider.WriteString("CASE id")
	for n, i := range idx {
		m := items[i].Message
		ids = append(ids, m.ID)
		if n > 0 {
			fence.WriteString(", ")
		}
		fence.WriteString("(?, ?)")
		fenceArgs = append(fenceArgs, m.ID, m.ClaimToken)
		provider.WriteString(" WHEN ? THEN ?")
		providerArgs = append(providerArgs, m.ID, kernel.Truncate(items[i].Outcome.ProviderMessageID, 128))
	}
	fence.WriteString(")")
	provider.WriteString(" ELSE provider_message_id END")
	args := append([]any{StatusSent, now, now}, providerArgs...)
	args = append(args, ids, StatusSending)
	args = append(args, fenceArgs...)
	res := tx.Exec("UPDATE "+messagesByID(tx)+" SET status = ?, attempts = attempts + 1, sent_at = ?, updated_at = ?, lease_until = NULL, "+
		"next_attempt_at = NULL, error_class = '', last_error = '', class_retries = 0, provider_message_id = "+provider.String()+
		" WHERE id IN ? AND status = ? AND "+fence.String(), args...)
	if res.Error != nil {
		return nil, fmt.Errorf("models: finish sent messages: %w", res.Error)
	}
	done := make(map[string]bool, len(idx))
	if int(res.RowsAffected) == len(idx) {
		for _, id := range ids {
			done[id] = true
		}
		return done, nil
	}
	// Some were taken over meanwhile: find out which of them are ours.
	var rows []struct {
		ID         string
		ClaimToken string
	}
	if err := tx.Model(&Message{}).Select("id, claim_token").Where("id IN ? AND status = ? AND updated_at = ?", ids, StatusSent, now).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("models: check finished messages: %w", err)
	}
	want := make(map[string]string, len(idx))
	for _, i := range idx {
		want[items[i].Message.ID] = items[i].Message.ClaimToken
	}
	for _, r := range rows {
		done[r.ID] = want[r.ID] == r.ClaimToken
	}
	return done, nil
}

func attemptRow(it Finish) Attempt {
	m, o := it.Message, it.Outcome
	n := m.Attempts
	if o.CountsAttempt {
		n++
	}
	outcome := "sent"
	switch {
	case o.Unknown:
		outcome = AttemptUnknown
	case o.Status != StatusSent:
		outcome = "failed"
	}
	return Attempt{MessageID: m.ID, N: n, StartedAt: o.StartedAt.UTC(), DurationMs: int(o.Duration.Milliseconds()),
		Outcome: outcome, ErrorClass: o.ErrorClass, ProviderCode: kernel.Truncate(o.ProviderCode, 32), Error: kernel.Truncate(o.Error, 1000)}
}

// ClaimMany claims several due messages at once with one lease (see ClaimForSending):
// one UPDATE and one SELECT for the lot. It returns every message found, by id, and the
// claim's token; the messages it claimed are those for which Claimed(token) is true.
func (s *Store) ClaimMany(ctx context.Context, ids []string, leaseUntil time.Time) (map[string]*Message, string, error) {
	now := kernel.Now()
	token := kernel.NewToken()[:ClaimTokenLen]
	db := s.k.Writer(ctx)
	err := db.Table(messagesByID(db)).
		Where("id IN ? AND ((status IN ? AND next_attempt_at <= ?) OR (status = ? AND lease_until < ?))",
			ids, delivery.Claimable, now.Add(claimEarly), StatusSending, now).
		Updates(map[string]any{"status": StatusSending, "lease_until": leaseUntil.UTC(), "claim_token": token, "updated_at": now}).Error
	if err != nil {
		return nil, "", fmt.Errorf("models: claim messages: %w", err)
	}
	out, err := s.messagesByIDs(ctx, ids)
	if err != nil {
		return nil, "", fmt.Errorf("models: read claimed messages: %w", err)
	}
	return out, token, nil
}

// ClaimTokenLen is the length of every claim's token.
const ClaimTokenLen = 24

// Claimed reports whether m is held under the claim with this token.
func (m *Message) Claimed(token string) bool {
	return m.Status == StatusSending && m.ClaimToken == token
}

// RetriesOf returns how many consecutive failures of class the message has had.
func (m *Message) RetriesOf(class string) int {
	if m.ErrorClass != class {
		return 0
	}
	return m.ClassRetries
}

// DueMessage is what the sweeper needs to re-enqueue a message.
type DueMessage struct {
	ID            string
	Priority      Priority
	NextAttemptAt time.Time
	// TaskID is the task the message waits for (empty on rows older than task ids: the
	// message id was their task's id).
	TaskID string
}

// DueCursor is a position in the due-message order, for paging.
type DueCursor struct {
	At time.Time
	ID string
}

// dueCondition selects the messages waiting (pending or failed) and due by a time. They
// are found on idx_messages_due, which holds next_attempt_at alone so that claims leave
// it alone (migration 00039); the unary plus keeps SQLite from preferring the status
// index, which would read every waiting message, due or not (MySQL ignores it).
const dueCondition = "+status IN ? AND next_attempt_at <= ?"

// DueMessages lists pending or failed messages due by dueBy in (next_attempt_at, id)
// order, after the cursor (the zero cursor starts at the beginning).
func (s *Store) DueMessages(ctx context.Context, dueBy time.Time, after DueCursor, limit int) ([]DueMessage, error) {
	var out []DueMessage
	dueBy, after.At = dueBy.UTC(), after.At.UTC() // SQLite compares times as text: every stored time is UTC
	q := s.reader(ctx).Model(&Message{}).Select("id, priority, next_attempt_at, task_id").
		Where(dueCondition, delivery.Waiting, dueBy)
	if !after.At.IsZero() {
		q = q.Where("(next_attempt_at > ? OR (next_attempt_at = ? AND id > ?))", after.At, after.At, after.ID)
	}
	err := q.Order("next_attempt_at, id").Limit(limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: due messages: %w", err)
	}
	return out, nil
}

// UnclaimedDue returns which of ids are pending or failed and due by dueBy: messages
// nobody is working on, whatever Redis says of their tasks.
func (s *Store) UnclaimedDue(ctx context.Context, ids []string, dueBy time.Time) ([]DueMessage, error) {
	var out []DueMessage
	if len(ids) == 0 {
		return out, nil
	}
	err := s.reader(ctx).Model(&Message{}).Select("id, priority, next_attempt_at, task_id").
		Where("id IN ? AND status IN ? AND next_attempt_at <= ?", ids, delivery.Waiting, dueBy.UTC()).
		Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: unclaimed due messages: %w", err)
	}
	return out, nil
}

// SetTaskID records that taskID carries the messages ids from now on, for those still
// waiting (pending or failed): the sweeper writes it before it enqueues a replacement.
func (s *Store) SetTaskID(ctx context.Context, taskID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	db := s.k.Writer(ctx)
	err := db.Table(messagesByID(db)).
		Where("id IN ? AND status IN ?", ids, delivery.Waiting).
		UpdateColumn("task_id", taskID).Error
	if err != nil {
		return fmt.Errorf("models: record task %s: %w", taskID, err)
	}
	return nil
}

// Released is a message whose claim expired, returned to failed by ReleaseExpiredLeases.
type Released struct {
	ID       string
	Priority Priority
	// ExpiredToken is the token of the claim that expired: a new task for the message
	// needs an id of its own, because the dead worker's task may still be held in Redis.
	ExpiredToken string
}

// AttemptUnknown is the outcome of an attempt whose worker stopped answering before it
// recorded a result: the platform may or may not have received the message.
const AttemptUnknown = "unknown"

// expiredClaim is what ReleaseExpiredLeases reads of a claim before releasing it.
type expiredClaim struct {
	ID         string
	Priority   Priority
	ClaimToken string
	Attempts   int
	UpdatedAt  time.Time // when the claim was taken
}

// ReleaseExpiredLeases returns sending messages whose lease ran out (their worker died
// or lost the database for longer than a lease) to failed, due now. Each one's attempt
// is recorded with outcome unknown and counts as an attempt: the worker may have called
// the platform before it died. It returns the messages it released.
//
// It finds them with a plain read and then updates each by primary key, with the claim
// repeated as the compare-and-set: an UPDATE that scanned the status index would lock
// index ranges that workers claiming and finishing messages also lock, and deadlock with
// them; and a worker that renewed its lease meanwhile keeps its message.
func (s *Store) ReleaseExpiredLeases(ctx context.Context) ([]Released, error) {
	var released []Released
	for {
		now := kernel.Now()
		var claims []expiredClaim
		err := s.reader(ctx).Model(&Message{}).Select("id, priority, claim_token, attempts, updated_at").
			Where("status = ? AND lease_until < ?", StatusSending, now).
			Order("id").Limit(releasePage).Scan(&claims).Error
		if err != nil {
			return released, fmt.Errorf("models: release expired leases: %w", err)
		}
		if len(claims) == 0 {
			return released, nil
		}
		err = s.tx(ctx, func(tx *gorm.DB) error {
			var attempts []Attempt
			for _, c := range claims {
				res := tx.Model(&Message{}).
					Where("id = ? AND status = ? AND claim_token = ? AND lease_until < ?", c.ID, StatusSending, c.ClaimToken, now).
					Updates(map[string]any{"status": StatusFailed, "lease_until": nil, "next_attempt_at": now,
						"attempts": gorm.Expr("attempts + 1"), "error_class": "transient",
						"last_error": leaseExpiredError, "updated_at": now})
				if res.Error != nil {
					return fmt.Errorf("models: release expired lease of %s: %w", c.ID, res.Error)
				}
				if res.RowsAffected == 0 {
					continue // renewed or finished meanwhile
				}
				released = append(released, Released{ID: c.ID, Priority: c.Priority, ExpiredToken: c.ClaimToken})
				attempts = append(attempts, Attempt{MessageID: c.ID, N: c.Attempts + 1, StartedAt: c.UpdatedAt.UTC(),
					DurationMs: int(now.Sub(c.UpdatedAt).Milliseconds()), Outcome: AttemptUnknown,
					ErrorClass: "transient", Error: leaseExpiredError})
			}
			if len(attempts) > 0 {
				if err := insertAttempts(tx, attempts); err != nil {
					return fmt.Errorf("models: record unknown attempts: %w", err)
				}
			}
			return nil
		})
		if err != nil {
			return released, err
		}
		if len(claims) < releasePage {
			return released, nil
		}
	}
}

// leaseExpiredError explains an unknown attempt to the operator.
const leaseExpiredError = "the worker stopped answering during the attempt (its lease expired); the platform may have received the message"

// RenewLeases extends the leases of claims a live worker still holds: one UPDATE by
// primary key for all of them, fenced by the claims' tokens so a claim that expired and
// was taken over stays with its new holder. It reports how many leases it renewed.
func (s *Store) RenewLeases(ctx context.Context, ids, tokens []string, leaseUntil time.Time) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var renewed int64
	err := s.txRetry(ctx, func(tx *gorm.DB) error {
		res := tx.Table(messagesByID(tx)).
			Where("id IN ? AND status = ? AND claim_token IN ?", ids, StatusSending, tokens).
			UpdateColumn("lease_until", leaseUntil.UTC()) // not updated_at: it dates the claim
		renewed = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("models: renew leases: %w", err)
	}
	return renewed, nil
}

// releasePage is how many expired claims one statement releases.
const releasePage = 500

// CancelMessage cancels a pending or failed message. ErrStateChanged means it was in
// another state (sending, sent, stopped or cancelled already).
func (s *Store) CancelMessage(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		now := kernel.Now()
		res := tx.Model(&Message{}).
			Where("id = ? AND status IN ?", id, delivery.Cancellable).
			Updates(map[string]any{"status": StatusCancelled, "next_attempt_at": nil, "updated_at": now})
		if err := CASResult(res, "cancel", id); err != nil {
			return err
		}
		return RecordCancelled(tx, "id = ?", id, now)
	})
}

// RecordCancelled writes the events of the messages just cancelled (in tx, at now) that
// match where.
func RecordCancelled(tx *gorm.DB, where string, arg any, now time.Time) error {
	var rows []Message
	err := tx.Select("id, batch_id, callback_key_id").
		Where(where+" AND status = ? AND updated_at = ? AND callback_key_id IS NOT NULL", arg, StatusCancelled, now).Find(&rows).Error
	if err != nil {
		return fmt.Errorf("models: cancelled messages: %w", err)
	}
	finals := make([]finalMessage, 0, len(rows))
	for i := range rows {
		if f, ok := finalOf(&rows[i], StatusCancelled, ""); ok {
			finals = append(finals, f)
		}
	}
	return recordFinal(tx, finals, now)
}

// RetryMessage makes a stopped message pending again with a fresh allowance of attempts,
// carried by a task of its own (the message id). Attempts keep counting, so the history
// stays in order. A failed message already has a
// retry scheduled and is not changed (ErrStateChanged).
func (s *Store) RetryMessage(ctx context.Context, id string, extraAttempts int) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		now := kernel.Now()
		res := tx.Model(&Message{}).
			Where("id = ? AND status = ?", id, StatusStopped).
			Updates(map[string]any{"status": StatusPending, "next_attempt_at": now, "updated_at": now,
				"max_attempts": gorm.Expr("attempts + ?", extraAttempts), "class_retries": 0, "task_id": id})
		if err := CASResult(res, "retry", id); err != nil {
			return err
		}
		return reopen(tx, id)
	})
}

func CASResult(res *gorm.DB, op, id string) error {
	if res.Error != nil {
		return fmt.Errorf("models: %s message %s: %w", op, id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("models: %s message %s: %w", op, id, kernel.ErrStateChanged)
	}
	return nil
}

// MessageWithRecipient returns one message with its recipient's name and external id.
func (s *Store) MessageWithRecipient(ctx context.Context, id string) (*BatchMessage, error) {
	var out []BatchMessage
	err := s.reader(ctx).Table("messages AS m").
		Select("m.*, "+recipientColumns).
		Joins("LEFT JOIN recipients r ON r.id = m.recipient_id").Joins(joinChatGroups).
		Where("m.id = ?", id).Limit(1).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: message %s: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("models: message %s: %w", id, kernel.ErrNotFound)
	}
	return &out[0], nil
}

// OldestDue returns the next_attempt_at of the longest-waiting due message, or nil when
// nothing is due. Its age is how far delivery lags behind.
func (s *Store) OldestDue(ctx context.Context) (*time.Time, error) {
	var out []DueMessage
	err := s.reader(ctx).Model(&Message{}).Select("id, priority, next_attempt_at").
		Where(dueCondition, delivery.Waiting, kernel.Now()).
		Order("next_attempt_at").Limit(1).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: oldest due message: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return &out[0].NextAttemptAt, nil
}

// AuditParams are the parameters of a change to the message in the audit log: its id,
// its batch and the state it left.
func (m *Message) AuditParams() audit.Params {
	return audit.Params{"id": m.ID, "batch": m.BatchID, "old_status": string(m.Status)}
}
