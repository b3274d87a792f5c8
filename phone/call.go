// Package phone is the calls of alerts: each call a step of an escalation places by
// voice, which step placed it and whom it rang, what the callee did (answered and
// pressed 1, did not answer, was busy) as the voice provider reports it back, and the
// calls that were never placed because their alert was taken or over first. A
// provider's report reaches Switchboard.VoiceCallback, which acknowledges the alert
// on a keypad 1 and fires the next step at once when a call on a step that says so
// went unanswered (package alert does both, under its own compare-and-sets).
package phone

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"herald/channels"
	"herald/delivery"
	"herald/kernel"
	"herald/models"
)

// Call outcomes: the provider's (channels.VoiceAnswered, VoiceNoAnswer, VoiceBusy,
// VoiceFailed), and Herald's own.
const (
	// CallAwaiting: placed (or about to be), nothing reported yet.
	CallAwaiting = ""
	// CallNotPlaced: the alert was taken or over before the call was placed; Reason
	// says which (alert.CallCancelled…).
	CallNotPlaced = "not_placed"
)

// AckKey is the key a callee presses to acknowledge the alert.
const AckKey = "1"

// Call is one call a step of an alert placed: the message that carried it, the step
// and round, whom it rang, and what became of it.
type Call struct {
	MessageID string `gorm:"primaryKey"`
	AlertID   int64
	AccountID int64
	Step      int
	Round     int
	// Advance is the step's advance_on_no_answer, as the step was when it fired.
	Advance bool
	// Person is the callee's external id.
	Person string
	// Outcome is CallAwaiting, a provider's outcome, or CallNotPlaced; Keys the digits
	// pressed; Reason why a call was not placed.
	Outcome    string
	Keys       string `gorm:"column:keys_pressed"`
	Reason     string
	ReportedAt *time.Time
	CreatedAt  time.Time
}

// TableName implements gorm's tabler.
func (Call) TableName() string { return "alert_calls" }

// Acknowledged says the callee pressed the acknowledgment key.
func (c *Call) Acknowledged() bool {
	return c.Outcome == "answered" && len(c.Keys) > 0 && c.Keys[:1] == AckKey
}

// CallLog is the calls' data, on the database of a message store (or its
// transaction).
type CallLog struct {
	k *kernel.DB
}

// Of is the calls' data on the database of m, in its transaction when m is bound to
// one.
func Of(m *models.Store) *CallLog { return &CallLog{k: m.DB()} }

// AddCalls records calls just placed.
func (l *CallLog) AddCalls(ctx context.Context, calls []Call) error {
	if len(calls) == 0 {
		return nil
	}
	if err := l.k.Writer(ctx).Create(&calls).Error; err != nil {
		return fmt.Errorf("phone: add calls: %w", err)
	}
	return nil
}

// CallByMessage finds the call a message carried; kernel.ErrNotFound if it carried
// none.
func (l *CallLog) CallByMessage(ctx context.Context, messageID string) (*Call, error) {
	var out []Call
	if err := l.k.Reader(ctx).Where("message_id = ?", messageID).Limit(1).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("phone: call of message %s: %w", messageID, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("phone: call of message %s: %w", messageID, kernel.ErrNotFound)
	}
	return &out[0], nil
}

// CallByProviderID finds the call of the account accountID that the provider named
// callID when it placed it (the message's provider message id); kernel.ErrNotFound if
// none.
func (l *CallLog) CallByProviderID(ctx context.Context, accountID int64, callID string) (*Call, error) {
	var out []Call
	err := l.k.Reader(ctx).Table("alert_calls c").Select("c.*").Joins("JOIN messages m ON m.id = c.message_id").
		Where("c.account_id = ? AND m.provider_message_id = ?", accountID, callID).Limit(1).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("phone: call %s: %w", callID, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("phone: call %s: %w", callID, kernel.ErrNotFound)
	}
	return &out[0], nil
}

// CallsOf lists the calls of alerts, oldest first.
func (l *CallLog) CallsOf(ctx context.Context, alertIDs ...int64) ([]Call, error) {
	var out []Call
	if len(alertIDs) == 0 {
		return nil, nil
	}
	if err := l.k.Reader(ctx).Where("alert_id IN ?", alertIDs).Order("created_at, message_id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("phone: calls of alerts: %w", err)
	}
	return out, nil
}

// RecordOutcome writes a report's outcome and keys on the call c was read as, if the
// report says something new: a first report of a call awaiting one, or the keys of an
// answered call that had none. The compare-and-set makes a report twice, or two at
// once, count once. false: nothing new.
func (l *CallLog) RecordOutcome(ctx context.Context, c *Call, outcome, keys string, at time.Time) (bool, error) {
	res := l.k.Writer(ctx).Model(&Call{}).
		Where("message_id = ? AND outcome = ? AND keys_pressed = ?", c.MessageID, c.Outcome, c.Keys).
		Updates(map[string]any{"outcome": outcome, "keys_pressed": keys, "reported_at": at})
	if res.Error != nil {
		return false, fmt.Errorf("phone: record the outcome of call %s: %w", c.MessageID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// NotPlaced marks the call c, as read awaiting its outcome, CallNotPlaced for reason: a
// compare-and-set, false when a report or another worker moved it first.
func (l *CallLog) NotPlaced(ctx context.Context, c *Call, reason string, now time.Time) (bool, error) {
	res := l.k.Writer(ctx).Model(&Call{}).Where("message_id = ? AND outcome = ?", c.MessageID, CallAwaiting).
		Updates(map[string]any{"outcome": CallNotPlaced, "reason": reason, "reported_at": now})
	if res.Error != nil {
		return false, fmt.Errorf("phone: call %s not placed: %w", c.MessageID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// CancelCalls cancels the calls of an alert not placed yet (their messages still
// waiting: pending, failed with a retry due, held, throttled), and marks them
// CallNotPlaced for reason, at now. It returns how many.
func (l *CallLog) CancelCalls(ctx context.Context, alertID int64, reason string, now time.Time) (int64, error) {
	var n int64
	err := l.k.Tx(ctx, func(tx *gorm.DB) error {
		waiting := tx.Model(&Call{}).Select("message_id").Where("alert_id = ? AND outcome = ?", alertID, CallAwaiting)
		res := tx.Model(&models.Message{}).Where("alert_id = ? AND status IN ? AND id IN (?)", alertID, delivery.Cancellable, waiting).
			Updates(map[string]any{"status": models.StatusCancelled, "next_attempt_at": nil, "updated_at": now})
		if res.Error != nil {
			return res.Error
		}
		if n = res.RowsAffected; n == 0 {
			return nil
		}
		if err := models.RecordCancelled(tx, "alert_id = ?", alertID, now); err != nil {
			return err
		}
		cancelled := tx.Model(&models.Message{}).Select("id").Where("alert_id = ? AND status = ? AND updated_at = ?", alertID, models.StatusCancelled, now)
		return tx.Model(&Call{}).Where("alert_id = ? AND outcome = ? AND message_id IN (?)", alertID, CallAwaiting, cancelled).
			Updates(map[string]any{"outcome": CallNotPlaced, "reason": reason, "reported_at": now}).Error
	})
	if err != nil {
		return 0, fmt.Errorf("phone: cancel the calls of alert %d: %w", alertID, err)
	}
	return n, nil
}

// The platforms whose notices a per-number limit may hold: a call, an SMS.
var heldPlatforms = []string{"voice", "sms"}

// Held is a call or SMS of an alert that waits because a limit of its account holds
// it (throttled): a provider's per-number limit, as a rule.
type Held struct {
	MessageID   string
	RecipientID int64
	Platform    string
	// Window names the limit that holds it (per_recipient_per_minute, …), "" when the
	// worker did not say.
	Window string
	// Until is when it is due to be tried again.
	Until *time.Time
}

// HeldNotices lists the calls and SMS of an alert that wait throttled, oldest first.
func (l *CallLog) HeldNotices(ctx context.Context, alertID int64) ([]Held, error) {
	var rows []struct {
		ID            string
		RecipientID   int64
		Platform      string
		LastError     string
		NextAttemptAt *time.Time
	}
	err := l.k.Reader(ctx).Model(&models.Message{}).Select("id, recipient_id, platform, last_error, next_attempt_at").
		Where("alert_id = ? AND platform IN ? AND status IN ? AND error_class = ?", alertID, heldPlatforms, delivery.Waiting,
			string(channels.Throttled)).Order("created_at, id").Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("phone: held notices of alert %d: %w", alertID, err)
	}
	out := make([]Held, len(rows))
	for i, r := range rows {
		out[i] = Held{MessageID: r.ID, RecipientID: r.RecipientID, Platform: r.Platform, Until: r.NextAttemptAt}
		// The worker writes "waiting for <window> capacity" (tasks.Sender.admit).
		if w, ok := strings.CutPrefix(r.LastError, "waiting for "); ok {
			out[i].Window, _ = strings.CutSuffix(w, " capacity")
		}
	}
	return out, nil
}
