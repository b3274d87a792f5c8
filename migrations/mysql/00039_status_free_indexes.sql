-- +goose Up
-- Every claim and every finish changes a message's status, and InnoDB moves the row's
-- entry in each index that holds status: three of them did (idx_messages_due,
-- idx_messages_status_created, idx_messages_digest), so a delivered message cost six
-- index moves. Two of them need no status:
--
-- The due index keeps next_attempt_at alone. A claim leaves it unchanged, so the
-- claim moves nothing in it; a finish moves the entry once, to NULL (every message
-- neither waiting nor being sent has no next_attempt_at). The sweeper's range on it
-- reads the messages due plus the few being sent, in (next_attempt_at, id) order, so it
-- no longer sorts every due row to page through them.
--
-- The digest index is on digest_waiting, a virtual column that holds the digest slot
-- of a notice waiting in its group (pending) and is NULL otherwise. InnoDB updates an
-- index on a virtual column only when the column's value changes, so a message
-- without a digest never moves in it, and the digest pass still reads only the
-- notices that wait, however many were digested before.
DROP INDEX idx_messages_due ON messages;
CREATE INDEX idx_messages_due ON messages (next_attempt_at);
DROP INDEX idx_messages_digest ON messages;
ALTER TABLE messages ADD COLUMN digest_waiting VARCHAR(191)
  AS (CASE WHEN status = 'pending' AND digest_slot <> '' THEN digest_slot END) VIRTUAL;
CREATE INDEX idx_messages_digest ON messages (digest_waiting, digest_due_at);

-- +goose Down
DROP INDEX idx_messages_digest ON messages;
ALTER TABLE messages DROP COLUMN digest_waiting;
CREATE INDEX idx_messages_digest ON messages (status, digest_slot, digest_due_at);
DROP INDEX idx_messages_due ON messages;
CREATE INDEX idx_messages_due ON messages (status, next_attempt_at);
