package models

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"herald/kernel"
)

// messageColumn is a column of the messages table and the field of a Message it is
// read into.
type messageColumn struct {
	name string
	into any
}

// messageColumns lists every column of a message row, with m's field for each. A claim
// reads back a chunk's hundred rows this way: GORM's Find sets each field of each row
// through reflection, which cost the worker more than the database took to answer. A
// test checks the list against the model.
func messageColumns(m *Message) []messageColumn {
	return []messageColumn{
		{"id", &m.ID}, {"batch_id", &m.BatchID}, {"recipient_id", &m.RecipientID}, {"account_id", &m.AccountID},
		{"platform", &m.Platform}, {"address", &m.Address}, {"msg_type", &m.MsgType}, {"subject", &m.Subject},
		{"content", &m.Content}, {"content_html", &m.ContentHTML}, {"priority", &m.Priority}, {"status", &m.Status},
		{"attempts", &m.Attempts}, {"max_attempts", &m.MaxAttempts}, {"class_retries", &m.ClassRetries},
		{"send_at", &m.SendAt}, {"next_attempt_at", &m.NextAttemptAt}, {"lease_until", &m.LeaseUntil},
		{"claim_token", &m.ClaimToken}, {"error_class", &m.ErrorClass}, {"last_error", &m.LastError},
		{"provider_message_id", &m.ProviderMessageID}, {"task_id", &m.TaskID}, {"callback_key_id", &m.CallbackKeyID},
		{"fallback", &m.Fallback}, {"fallback_due", &m.FallbackDue}, {"fallback_of", &m.FallbackOf},
		{"fallback_next", &m.FallbackNext}, {"template_version", &m.TemplateVersion}, {"created_at", &m.CreatedAt},
		{"updated_at", &m.UpdatedAt}, {"sent_at", &m.SentAt}, {"recalled_at", &m.RecalledAt}, {"recalled_by", &m.RecalledBy},
		{"alert_id", &m.AlertID}, {"digest_slot", &m.DigestSlot}, {"digest_due_at", &m.DigestDueAt},
		{"digest_max", &m.DigestMax}, {"digest_message_id", &m.DigestMessageID},
		{"chat_group_id", &m.ChatGroupID}, {"mentions", &m.Mentions}, {"provider_template", &m.ProviderTemplate},
	}
}

// messageSelect is the select list of messageColumns.
var messageSelect = func() string {
	var names []string
	for _, c := range messageColumns(&Message{}) {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}()

// messagesByIDs reads the messages with these ids, by id; an id with no row is left out.
func (s *Store) messagesByIDs(ctx context.Context, ids []string) (map[string]*Message, error) {
	rows, err := s.reader(ctx).Raw("SELECT "+messageSelect+" FROM messages WHERE id IN ?", ids).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]*Message, len(ids))
	into := make([]any, 0, 64)
	for rows.Next() {
		m := new(Message)
		into = into[:0]
		for _, c := range messageColumns(m) {
			into = append(into, c.into)
		}
		if err := rows.Scan(into...); err != nil {
			return nil, fmt.Errorf("message row: %w", err)
		}
		out[m.ID] = m
	}
	return out, rows.Err()
}

// appendMessageValues appends m's values to args in the order of messageColumns, as a
// database driver takes them (nil for a nil pointer). A test holds the two lists
// together.
func appendMessageValues(args []any, m *Message) []any {
	return append(args,
		m.ID, m.BatchID, m.RecipientID, m.AccountID,
		m.Platform, m.Address, m.MsgType, m.Subject,
		m.Content, m.ContentHTML, string(m.Priority), string(m.Status),
		m.Attempts, m.MaxAttempts, m.ClassRetries,
		m.SendAt, nullable(m.NextAttemptAt), nullable(m.LeaseUntil),
		m.ClaimToken, m.ErrorClass, m.LastError,
		m.ProviderMessageID, m.TaskID, nullable(m.CallbackKeyID),
		m.Fallback, m.FallbackDue, nullable(m.FallbackOf),
		nullable(m.FallbackNext), nullable(m.TemplateVersion), m.CreatedAt,
		m.UpdatedAt, nullable(m.SentAt), nullable(m.RecalledAt), m.RecalledBy,
		nullable(m.AlertID), m.DigestSlot, nullable(m.DigestDueAt),
		m.DigestMax, nullable(m.DigestMessageID),
		nullable(m.ChatGroupID), m.Mentions, m.ProviderTemplate,
	)
}

// nullable is *v, or nil (NULL) for a nil pointer.
func nullable[T any](v *T) any {
	if v == nil {
		return nil
	}
	return *v
}

// insertMessages writes new messages with kernel.InsertRows. Every intake writes its messages
// this way: GORM's CreateInBatches reflects over each of the 39 fields of each row, and
// took 38,000 allocations to write 1,000 messages where this takes 15,000
// (BenchmarkCreateBatch). Like Create it sets the created and updated times left zero
// to now, and it writes each row at the size its claim leaves it (unclaimed).
func insertMessages(w kernel.RowWriter, msgs []Message) error {
	now := kernel.Now()
	return kernel.InsertRows(w, "messages", messageSelect, len(msgs), func(i int, args []any) []any {
		m := &msgs[i]
		if m.CreatedAt.IsZero() {
			m.CreatedAt = now
		}
		if m.UpdatedAt.IsZero() {
			m.UpdatedAt = now
		}
		unclaimed(m)
		return appendMessageValues(args, m)
	})
}

// insertMessage writes one new message as insertMessages does, setting its times on m.
// Every message Herald makes goes through insertMessages: the intake's, a digest, the
// next message of a fallback chain.
func insertMessage(tx *gorm.DB, m *Message) error {
	one := []Message{*m}
	if err := insertMessages(kernel.OnTx(tx), one); err != nil {
		return err
	}
	*m = one[0]
	return nil
}

// UnclaimedToken is the claim_token of a message no claim has held: as long as every
// claim's token (ClaimTokenLen), and never one (base64url has no '.').
var UnclaimedToken = strings.Repeat(".", ClaimTokenLen)

// unclaimed gives a new pending message the claim columns of a claim that has ended:
// the placeholder token and a lease that ended when it was written. Both mean something
// only while a message is sending. Written NULL and empty, the claim lengthened every
// row (a lease where there was none, 24 characters where there were none), and InnoDB
// rewrites a row whose length changes rather than update it in place: a claim cost
// MariaDB a third more (BenchmarkClaimFinish, docs/benchmarks.md). Messages created in
// any other status are written as given. A silence's release gives a message back the
// placeholder token too, and its hold leaves the lease as it was.
func unclaimed(m *Message) {
	if m.Status != StatusPending {
		return
	}
	if m.ClaimToken == "" {
		m.ClaimToken = UnclaimedToken
	}
	if m.LeaseUntil == nil {
		ended := m.CreatedAt
		m.LeaseUntil = &ended
	}
}
