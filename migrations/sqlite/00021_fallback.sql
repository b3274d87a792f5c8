-- +goose Up
-- Fallback chains. A message keeps the platforms still to try (comma-separated); when it
-- stops with some left, fallback_due marks it in the same transaction, and the next
-- message is created on the next platform, linked both ways (fallback_of,
-- fallback_next). A batch keeps its request's variables, to render the next message.
ALTER TABLE messages ADD COLUMN fallback TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN fallback_of TEXT NULL;
ALTER TABLE messages ADD COLUMN fallback_next TEXT NULL;
ALTER TABLE messages ADD COLUMN fallback_due BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX idx_messages_fallback_due ON messages (fallback_due);
ALTER TABLE batches ADD COLUMN variables TEXT NULL;
ALTER TABLE templates ADD COLUMN fallback TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE templates DROP COLUMN fallback;
ALTER TABLE batches DROP COLUMN variables;
DROP INDEX idx_messages_fallback_due;
ALTER TABLE messages DROP COLUMN fallback_due;
ALTER TABLE messages DROP COLUMN fallback_next;
ALTER TABLE messages DROP COLUMN fallback_of;
ALTER TABLE messages DROP COLUMN fallback;
