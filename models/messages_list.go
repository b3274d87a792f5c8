package models

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"herald/kernel"
)

// MessageFilter selects messages for the console's message list; zero fields do not
// filter. Status, platform, error class, account and recipient each lead an index
// together with created_at (migrations 00001 and 00002), so a page of the newest-first
// list is an index range scan however many rows the table holds; a batch's messages
// are few enough to sort.
type MessageFilter struct {
	Status      Status
	Platform    string
	AccountID   int64
	RecipientID int64
	// Recipient keeps the messages to the person with this external id; an id nobody
	// has matches nothing, exactly like a person with no messages, so that a filter
	// never tells which staff exist.
	Recipient  string
	BatchID    string
	ErrorClass string
	// Named, when not nil, keeps the messages to these people: those whose name a
	// search finds, in Chinese or in pinyin (directory.Staff.RecipientIDsByName). An
	// empty list matches nothing. RecipientName is the search as typed, for the record.
	Named         []int64
	RecipientName string
	// CreatedFrom and CreatedBefore bound created_at: From <= created_at < Before.
	CreatedFrom, CreatedBefore *time.Time
	// OwnKey, when not 0, keeps the messages of batches created through that API key
	// only: what a send or read key may see (see Store.CheckOwn).
	OwnKey int64
	// Waiting keeps the messages waiting for this reason now (WaitReasons).
	Waiting string
}

// OwnBatches and OwnAlerts are the rule of what an API key without the admin scope may
// read and change: the batches created through it and their messages, and the notices
// Herald sent for an alert one of them opened (its steps, who took it, that nobody
// answered), which the key may follow and recall as its own. CheckOwn,
// MessageFilter.OwnKey and AlertFilter.OwnKey apply it, with the key as the named
// argument key. The notices are found by their alert_id (indexed), so that a list of
// the key's messages costs the same per row whatever the size of other keys' batches.
const (
	OwnBatches = "SELECT id FROM batches WHERE api_key_id = @key"
	OwnAlerts  = "SELECT sa.id FROM alerts sa JOIN batches sb ON sb.id = sa.batch_id WHERE sb.api_key_id = @key"
)

// CheckOwn answers ErrNotFound when ownKey is not 0 and the batch was not created through
// that API key, nor is one of notices of an alert the key opened: a send or read key
// sees only its own batches and their messages, and
// another key's answer "not found", so that an id it learnt elsewhere is not confirmed.
func (s *Store) CheckOwn(ctx context.Context, ownKey int64, batchID string) error {
	if ownKey == 0 {
		return nil
	}
	var n int64
	err := s.reader(ctx).Table("batches").Where("id = @batch AND (id IN ("+OwnBatches+") OR EXISTS (SELECT 1 FROM messages sm WHERE sm.batch_id = @batch AND sm.alert_id IN ("+OwnAlerts+")))",
		sql.Named("batch", batchID), sql.Named("key", ownKey)).Count(&n).Error
	if err != nil {
		return fmt.Errorf("models: batch %s of api key %d: %w", batchID, ownKey, err)
	}
	if n == 0 {
		return fmt.Errorf("models: batch %s: %w", batchID, kernel.ErrNotFound)
	}
	return nil
}

func (f MessageFilter) apply(q *gorm.DB) *gorm.DB {
	if f.Status != "" {
		q = q.Where("m.status = ?", f.Status)
	}
	if f.Platform != "" {
		q = q.Where("m.platform = ?", f.Platform)
	}
	if f.AccountID != 0 {
		q = q.Where("m.account_id = ?", f.AccountID)
	}
	if f.RecipientID != 0 {
		q = q.Where("m.recipient_id = ?", f.RecipientID)
	}
	if f.Recipient != "" {
		q = q.Where("m.recipient_id IN (SELECT id FROM recipients WHERE external_id = ?)", f.Recipient)
	}
	if f.BatchID != "" {
		q = q.Where("m.batch_id = ?", f.BatchID)
	}
	if f.ErrorClass != "" {
		q = q.Where("m.error_class = ?", f.ErrorClass)
	}
	if f.Waiting != "" {
		cond, args := waitingCondition(f.Waiting, kernel.Now())
		q = q.Where(cond, args...)
	}
	if f.OwnKey != 0 {
		q = q.Where("(m.batch_id IN ("+OwnBatches+") OR m.alert_id IN ("+OwnAlerts+"))", sql.Named("key", f.OwnKey))
	}
	if f.Named != nil {
		// -1 is no one's id: it keeps the list from being empty, which SQL refuses.
		q = q.Where("m.recipient_id IN ?", append([]int64{-1}, f.Named...))
	}
	// SQLite compares times as text: every stored time is UTC.
	if f.CreatedFrom != nil {
		q = q.Where("m.created_at >= ?", f.CreatedFrom.UTC())
	}
	if f.CreatedBefore != nil {
		q = q.Where("m.created_at < ?", f.CreatedBefore.UTC())
	}
	return q
}

// MessageCursor is a position in the newest-first message list: the last row shown.
type MessageCursor struct {
	CreatedAt time.Time
	ID        string
}

// String encodes the cursor for a URL.
func (c MessageCursor) String() string {
	return strconv.FormatInt(c.CreatedAt.UnixMicro(), 10) + "_" + c.ID
}

// ParseMessageCursor decodes a cursor made by MessageCursor.String.
func ParseMessageCursor(s string) (*MessageCursor, error) {
	micros, id, ok := strings.Cut(s, "_")
	n, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil || id == "" || len(id) > 36 {
		return nil, kernel.Invalid("before", "messages.invalid.cursor")
	}
	return &MessageCursor{CreatedAt: time.UnixMicro(n).UTC(), ID: id}, nil
}

// ListContentChars is how much of a message's content the list reads: the start of it.
const ListContentChars = 1000

// messageListColumns are the columns a list row shows: everything but the content, of
// which only the first ListContentChars characters.
var messageListColumns = "m.id, m.batch_id, m.recipient_id, m.account_id, m.platform, m.address, m.msg_type, " +
	"m.subject, SUBSTR(m.content, 1, " + strconv.Itoa(ListContentChars) + ") AS content, m.priority, m.status, m.attempts, m.max_attempts, m.send_at, m.next_attempt_at, m.error_class, " +
	"m.last_error, m.created_at, m.updated_at, m.sent_at, m.digest_slot, m.digest_message_id, " + recipientColumns

// ListMessages lists the messages matching a filter, newest first, with their
// recipients' names: at most limit of them, starting after the cursor (nil starts at the
// newest). Paging is keyset on (created_at, id), never OFFSET, so every page costs the same.
func (s *Store) ListMessages(ctx context.Context, f MessageFilter, after *MessageCursor, limit int) ([]BatchMessage, error) {
	q := f.apply(s.reader(ctx).Table("messages AS m").Select(messageListColumns).
		Joins("LEFT JOIN recipients r ON r.id = m.recipient_id").Joins(joinChatGroups))
	if after != nil {
		at := after.CreatedAt.UTC()
		// The first condition alone is a range on the index; the second breaks ties.
		q = q.Where("m.created_at <= ? AND (m.created_at < ? OR m.id < ?)", at, at, after.ID)
	}
	var out []BatchMessage
	if err := q.Order("m.created_at DESC, m.id DESC").Limit(limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("models: list messages: %w", err)
	}
	return out, nil
}

// stoppedOf narrows a filter to stopped messages; ok is false when the filter asks for
// another status, so nothing can match.
func (f MessageFilter) stoppedOf() (MessageFilter, bool) {
	if f.Status != "" && f.Status != StatusStopped {
		return f, false
	}
	f.Status = StatusStopped
	return f, true
}

// CountStopped counts the stopped messages matching a filter: what a bulk re-send of
// the filter would retry.
func (s *Store) CountStopped(ctx context.Context, f MessageFilter) (int64, error) {
	f, ok := f.stoppedOf()
	if !ok {
		return 0, nil
	}
	var n int64
	if err := f.apply(s.reader(ctx).Table("messages AS m")).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("models: count stopped messages: %w", err)
	}
	return n, nil
}

// StoppedMessages returns up to limit stopped messages matching a filter, oldest first,
// after the cursor (nil starts at the oldest): one chunk of a bulk re-send. Only the
// columns a retry needs are read.
func (s *Store) StoppedMessages(ctx context.Context, f MessageFilter, after *MessageCursor, limit int) ([]Message, error) {
	f, ok := f.stoppedOf()
	if !ok {
		return nil, nil
	}
	q := f.apply(s.reader(ctx).Table("messages AS m").Select("m.id, m.account_id, m.priority, m.status, m.created_at, m.updated_at"))
	if after != nil {
		at := after.CreatedAt.UTC()
		q = q.Where("m.created_at >= ? AND (m.created_at > ? OR m.id > ?)", at, at, after.ID)
	}
	var out []Message
	if err := q.Order("m.created_at, m.id").Limit(limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("models: stopped messages: %w", err)
	}
	return out, nil
}
