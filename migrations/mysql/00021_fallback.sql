-- +goose Up
-- Fallback chains. A message keeps the platforms still to try (comma-separated); when it
-- stops with some left, fallback_due marks it in the same transaction, and the next
-- message is created on the next platform, linked both ways (fallback_of,
-- fallback_next). A batch keeps its request's variables, to render the next message.
ALTER TABLE messages
  ADD COLUMN fallback VARCHAR(64) NOT NULL DEFAULT '',
  ADD COLUMN fallback_of CHAR(36) CHARACTER SET ascii NULL,
  ADD COLUMN fallback_next CHAR(36) CHARACTER SET ascii NULL,
  ADD COLUMN fallback_due BOOLEAN NOT NULL DEFAULT FALSE,
  ADD KEY idx_messages_fallback_due (fallback_due);
ALTER TABLE batches ADD COLUMN variables TEXT NULL;
ALTER TABLE templates ADD COLUMN fallback VARCHAR(64) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE templates DROP COLUMN fallback;
ALTER TABLE batches DROP COLUMN variables;
ALTER TABLE messages DROP KEY idx_messages_fallback_due, DROP COLUMN fallback, DROP COLUMN fallback_of,
  DROP COLUMN fallback_next, DROP COLUMN fallback_due;
