-- +goose Up
-- Claims and finishes change status; the due and digest indexes stop holding it, so
-- they are not rewritten on every claim and finish (see the MySQL migration of the same
-- number). SQLite keeps both partial: only rows with a due time, and only notices
-- waiting in a digest group, have an entry at all. id is listed because SQLite keeps
-- the primary key out of secondary indexes of a rowid table.
DROP INDEX idx_messages_due;
CREATE INDEX idx_messages_due ON messages (next_attempt_at, id) WHERE next_attempt_at IS NOT NULL;
DROP INDEX idx_messages_digest;
ALTER TABLE messages ADD COLUMN digest_waiting TEXT
  GENERATED ALWAYS AS (CASE WHEN status = 'pending' AND digest_slot <> '' THEN digest_slot END) VIRTUAL;
CREATE INDEX idx_messages_digest ON messages (digest_waiting, digest_due_at) WHERE digest_waiting IS NOT NULL;

-- +goose Down
DROP INDEX idx_messages_digest;
ALTER TABLE messages DROP COLUMN digest_waiting;
CREATE INDEX idx_messages_digest ON messages (status, digest_slot, digest_due_at);
DROP INDEX idx_messages_due;
CREATE INDEX idx_messages_due ON messages (status, next_attempt_at);
