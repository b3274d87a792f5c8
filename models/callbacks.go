package models

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"herald/access"
	"herald/kernel"
)

// Status callback event types: what a calling system hears about the messages it asked
// for.
const (
	EventMessageSent      = "message.sent"
	EventMessageStopped   = "message.stopped"
	EventMessageCancelled = "message.cancelled"
	EventBatchCompleted   = "batch.completed"
)

// EventMessageRecalled is the status event of a sent message taken back on its platform.
const EventMessageRecalled = "message.recalled"

// EventMessageHeld is the event of a message an active silence held.
const EventMessageHeld = "message.held"

// EventTypes lists the event types.
var EventTypes = []string{EventMessageSent, EventMessageStopped, EventMessageCancelled, EventMessageRecalled, EventMessageDigested, EventMessageHeld, EventBatchCompleted}

// Delivery states of a callback event.
const (
	EventPending   = "pending"
	EventDelivered = "delivered"
	// EventFailed is an event Herald gave up on after CallbackGiveUp: an operator may
	// send it again.
	EventFailed = "failed"
)

// CallbackGiveUp is how long Herald keeps trying to deliver an event before it marks
// it failed: a receiver down for a day or two still gets everything.
const CallbackGiveUp = 72 * time.Hour

// CallbackEvent is one status event in the outbox. It is written in the transaction of
// the state change that causes it, so a crash can never lose it; Seq orders the events
// of a key, and events of one message are delivered in that order.
type CallbackEvent struct {
	Seq           int64  `gorm:"primaryKey;autoIncrement"`
	EventID       string `gorm:"column:id"`
	APIKeyID      int64  `gorm:"column:api_key_id"`
	Type          string
	MessageID     *string
	BatchID       string
	Status        string
	ErrorClass    string
	OccurredAt    time.Time
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	DeliveredAt   *time.Time
	// An alert's event (alert.*) names the alert, the step and round it had reached
	// (0 before its first step), and who acknowledged or resolved it; nil and empty for
	// a message's or a batch's event.
	AlertID    *int64
	AlertStep  *int
	AlertRound *int
	AlertBy    string
}

// TableName implements gorm's tabler.
func (CallbackEvent) TableName() string { return "callback_events" }

// eventOfStatus names the event a final message status causes ("" for none).
func eventOfStatus(s Status) string {
	switch s {
	case StatusSent:
		return EventMessageSent
	case StatusStopped:
		return EventMessageStopped
	case StatusCancelled:
		return EventMessageCancelled
	case StatusDigested:
		return EventMessageDigested
	}
	return ""
}

// finalMessage is a message of a callback key that has just reached a final status.
// A stopped message that falls back keeps its batch open (falling): the last message
// of its chain closes it. A chain that ends without a next message closes it
// without an event of its own (silent): its last message's event went already.
type finalMessage struct {
	id, batchID, errorClass string
	keyID                   int64
	status                  Status
	falling, silent         bool
}

// recordFinal writes the events of messages that reached a final status in tx, counts
// them off their batches, and writes batch.completed for each batch left with none
// open. The batch row's UPDATE serialises the transactions finishing messages of one
// batch, so exactly one of them sees the count reach zero.
func recordFinal(tx *gorm.DB, finals []finalMessage, now time.Time) error {
	if len(finals) == 0 {
		return nil
	}
	events := make([]CallbackEvent, 0, len(finals))
	perBatch := map[string]int{}
	keyOf := map[string]int64{}
	var batches []string
	for _, f := range finals {
		id := f.id
		if !f.silent {
			events = append(events, NewEvent(f.keyID, eventOfStatus(f.status), &id, f.batchID, string(f.status), f.errorClass, now))
		}
		if f.falling {
			continue
		}
		if perBatch[f.batchID] == 0 {
			batches = append(batches, f.batchID)
		}
		perBatch[f.batchID]++
		keyOf[f.batchID] = f.keyID
	}
	// Batches in a fixed order, so two transactions never lock them in opposite orders.
	slices.Sort(batches)
	for _, b := range batches {
		if err := tx.Exec("UPDATE batches SET callback_open = callback_open - ? WHERE id = ?", perBatch[b], b).Error; err != nil {
			return fmt.Errorf("models: count final messages of batch %s: %w", b, err)
		}
		var open int
		if err := tx.Raw("SELECT callback_open FROM batches WHERE id = ?", b).Scan(&open).Error; err != nil {
			return fmt.Errorf("models: open messages of batch %s: %w", b, err)
		}
		if open <= 0 {
			events = append(events, NewEvent(keyOf[b], EventBatchCompleted, nil, b, "completed", "", now))
		}
	}
	if len(events) == 0 {
		return nil
	}
	if err := kernel.CreateRows(tx, events); err != nil {
		return fmt.Errorf("models: record callback events: %w", err)
	}
	return nil
}

func NewEvent(keyID int64, typ string, messageID *string, batchID, status, errorClass string, now time.Time) CallbackEvent {
	return CallbackEvent{EventID: NewID(), APIKeyID: keyID, Type: typ, MessageID: messageID, BatchID: batchID,
		Status: status, ErrorClass: errorClass, OccurredAt: now, State: EventPending, NextAttemptAt: now}
}

// finalOf returns the final message an outcome leaves behind, if the message belongs to
// a callback key and the outcome is final.
func finalOf(m *Message, status Status, errorClass string) (finalMessage, bool) {
	if m.CallbackKeyID == nil || !status.Terminal() {
		return finalMessage{}, false
	}
	return finalMessage{id: m.ID, batchID: m.BatchID, keyID: *m.CallbackKeyID, status: status, errorClass: errorClass,
		falling: status == StatusStopped && m.Fallback != ""}, true
}

// reopen counts a message of a callback key open again on its batch (a stopped message
// retried).
func reopen(tx *gorm.DB, id string) error {
	err := tx.Exec("UPDATE batches SET callback_open = callback_open + 1 WHERE id = (SELECT batch_id FROM messages WHERE id = ? AND callback_key_id IS NOT NULL)", id).Error
	if err != nil {
		return fmt.Errorf("models: reopen message %s: %w", id, err)
	}
	return nil
}

// LeaseCallbacks takes the right to deliver a key's events until until (a
// compare-and-set on the key's row), so that one runner at a time delivers them and
// events of one message keep their order. It reports false when another runner holds it.
func (s *Outbox) LeaseCallbacks(ctx context.Context, keyID int64, now, until time.Time) (bool, error) {
	res := s.k.Writer(ctx).Model(&access.APIKey{}).
		Where("id = ? AND (callback_lease_until IS NULL OR callback_lease_until < ?)", keyID, now).
		Update("callback_lease_until", until)
	if res.Error != nil {
		return false, fmt.Errorf("models: lease callbacks of api key %d: %w", keyID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// ReleaseCallbacks gives a lease back.
func (s *Outbox) ReleaseCallbacks(ctx context.Context, keyID int64, until time.Time) error {
	return s.k.Writer(ctx).Model(&access.APIKey{}).Where("id = ? AND callback_lease_until = ?", keyID, until).
		Update("callback_lease_until", nil).Error
}

// DueCallbackKeys lists the keys with events due for delivery.
func (s *Outbox) DueCallbackKeys(ctx context.Context, now time.Time) ([]int64, error) {
	var ids []int64
	err := s.k.Reader(ctx).Model(&CallbackEvent{}).Distinct("api_key_id").
		Where("state = ? AND next_attempt_at <= ?", EventPending, now).Limit(1000).Pluck("api_key_id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("models: keys with due callbacks: %w", err)
	}
	return ids, nil
}

// EventDelivery is a pending event with what its body needs: the recipient's external id
// and the message's platform.
type EventDelivery struct {
	CallbackEvent
	Recipient *string
	Platform  string
	// DigestMessageID is the message that carried a digested notice.
	DigestMessageID *string
}

// eventDeliveries selects a key's events with what their body needs: the recipient's
// external id, and the platform of the message (of the batch for batch.completed).
func eventDeliveries(db *gorm.DB, keyID int64) *gorm.DB {
	return db.Table("callback_events e").
		Select("e.*, r.external_id AS recipient, COALESCE(m.platform, b.platform) AS platform, m.digest_message_id").
		Joins("JOIN batches b ON b.id = e.batch_id").
		Joins("LEFT JOIN messages m ON m.id = e.message_id").
		Joins("LEFT JOIN recipients r ON r.id = m.recipient_id").
		Where("e.api_key_id = ?", keyID)
}

// PendingCallbackEvents returns a key's first pending events in order, due or not (a
// later event of a message must wait for an earlier one that is not due yet).
func (s *Outbox) PendingCallbackEvents(ctx context.Context, keyID int64, limit int) ([]EventDelivery, error) {
	var out []EventDelivery
	err := eventDeliveries(s.k.Writer(ctx), keyID).Where("e.state = ?", EventPending).
		Order("e.seq").Limit(limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: pending callbacks of api key %d: %w", keyID, err)
	}
	return out, nil
}

// EventResult is how one delivery attempt ended: Err is "" for a 2xx answer.
type EventResult struct {
	Seq   int64
	Err   string
	Retry time.Time // when to try again after a failure
}

// RecordCallbackResults records delivery attempts: delivered, or failed with the next
// attempt's time, or failed for good after CallbackGiveUp. Each is a compare-and-set on
// a pending event.
func (s *Outbox) RecordCallbackResults(ctx context.Context, results []EventResult, now time.Time) error {
	var delivered []int64
	for _, r := range results {
		if r.Err == "" {
			delivered = append(delivered, r.Seq)
		}
	}
	return s.k.TxRetry(ctx, func(tx *gorm.DB) error {
		if len(delivered) > 0 {
			err := tx.Model(&CallbackEvent{}).Where("seq IN ? AND state = ?", delivered, EventPending).
				Updates(map[string]any{"state": EventDelivered, "delivered_at": now, "attempts": gorm.Expr("attempts + 1"), "last_error": ""}).Error
			if err != nil {
				return fmt.Errorf("models: record delivered callbacks: %w", err)
			}
		}
		for _, r := range results {
			if r.Err == "" {
				continue
			}
			state := gorm.Expr("CASE WHEN occurred_at < ? THEN ? ELSE ? END", now.Add(-CallbackGiveUp), EventFailed, EventPending)
			err := tx.Model(&CallbackEvent{}).Where("seq = ? AND state = ?", r.Seq, EventPending).
				Updates(map[string]any{"state": state, "attempts": gorm.Expr("attempts + 1"), "next_attempt_at": r.Retry,
					"last_error": kernel.Truncate(r.Err, 1000)}).Error
			if err != nil {
				return fmt.Errorf("models: record failed callback: %w", err)
			}
		}
		return nil
	})
}

// CallbackEventsPage is one page of a key's events, newest first.
type CallbackEventsPage struct {
	Events []EventDelivery
	// More says an older page exists; Before is where it starts.
	More   bool
	Before int64
}

// CallbackEventsOf lists a key's events newest first, before seq before (0: the
// newest), optionally in one state.
func (s *Outbox) CallbackEventsOf(ctx context.Context, keyID int64, state string, before int64, limit int) (CallbackEventsPage, error) {
	var page CallbackEventsPage
	q := eventDeliveries(s.k.Reader(ctx), keyID)
	if state != "" {
		q = q.Where("e.state = ?", state)
	}
	if before > 0 {
		q = q.Where("e.seq < ?", before)
	}
	if err := q.Order("e.seq DESC").Limit(limit + 1).Scan(&page.Events).Error; err != nil {
		return page, fmt.Errorf("models: callbacks of api key %d: %w", keyID, err)
	}
	if len(page.Events) > limit {
		page.Events, page.More = page.Events[:limit], true
		page.Before = page.Events[limit-1].Seq
	}
	return page, nil
}

// ResendCallbackEvent makes a delivered or failed event of a key pending again, due
// now. ErrStateChanged: it is pending already; ErrNotFound: the key has no such event.
func (s *Outbox) ResendCallbackEvent(ctx context.Context, keyID int64, eventID string) error {
	return s.k.Tx(ctx, func(tx *gorm.DB) error {
		now := kernel.Now()
		res := tx.Model(&CallbackEvent{}).Where("id = ? AND api_key_id = ? AND state IN ?", eventID, keyID, []string{EventDelivered, EventFailed}).
			Updates(map[string]any{"state": EventPending, "next_attempt_at": now})
		if res.Error != nil {
			return fmt.Errorf("models: send callback %s again: %w", eventID, res.Error)
		}
		if res.RowsAffected == 0 {
			var n int64
			if err := tx.Model(&CallbackEvent{}).Where("id = ? AND api_key_id = ?", eventID, keyID).Count(&n).Error; err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("models: callback %s: %w", eventID, kernel.ErrNotFound)
			}
			return fmt.Errorf("models: send callback %s again: %w", eventID, kernel.ErrStateChanged)
		}
		return nil
	})
}

// FailPendingCallbacks marks a key's pending events failed with a reason: they cannot go
// anywhere (the key's callback was removed). An operator may send them again.
func (s *Outbox) FailPendingCallbacks(ctx context.Context, keyID int64, reason string, now time.Time) error {
	err := s.k.Writer(ctx).Model(&CallbackEvent{}).Where("api_key_id = ? AND state = ?", keyID, EventPending).
		Updates(map[string]any{"state": EventFailed, "last_error": reason, "next_attempt_at": now}).Error
	if err != nil {
		return fmt.Errorf("models: fail callbacks of api key %d: %w", keyID, err)
	}
	return nil
}
