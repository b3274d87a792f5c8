-- +goose Up
-- Status callbacks. An API key may name a callback URL and a signing secret (sealed like
-- account credentials); a message created through such a key carries the key's id, and
-- its batch counts how many of those messages are not final yet (batch.completed fires
-- when that count reaches zero). Events wait in an outbox written in the transaction of
-- the state change that causes them; seq orders them.
ALTER TABLE api_keys
  ADD COLUMN callback_url VARCHAR(2048) NOT NULL DEFAULT '',
  ADD COLUMN callback_secret_enc TEXT NULL,
  ADD COLUMN callback_allow_private BOOLEAN NOT NULL DEFAULT FALSE,
  ADD COLUMN callback_lease_until DATETIME(6) NULL;
ALTER TABLE messages ADD COLUMN callback_key_id BIGINT NULL;
ALTER TABLE batches ADD COLUMN callback_open INT NOT NULL DEFAULT 0;
CREATE TABLE callback_events (
  seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  id CHAR(36) CHARACTER SET ascii NOT NULL,
  api_key_id BIGINT NOT NULL,
  type VARCHAR(32) NOT NULL,
  message_id CHAR(36) CHARACTER SET ascii NULL,
  batch_id CHAR(36) CHARACTER SET ascii NOT NULL,
  status VARCHAR(16) NOT NULL DEFAULT '',
  error_class VARCHAR(16) NOT NULL DEFAULT '',
  occurred_at DATETIME(6) NOT NULL,
  state VARCHAR(16) NOT NULL DEFAULT 'pending',
  attempts INT NOT NULL DEFAULT 0,
  next_attempt_at DATETIME(6) NOT NULL,
  last_error VARCHAR(1000) NOT NULL DEFAULT '',
  delivered_at DATETIME(6) NULL,
  UNIQUE KEY uq_callback_events_id (id),
  KEY idx_callback_events_due (state, next_attempt_at),
  KEY idx_callback_events_key (api_key_id, seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE callback_events;
ALTER TABLE batches DROP COLUMN callback_open;
ALTER TABLE messages DROP COLUMN callback_key_id;
ALTER TABLE api_keys DROP COLUMN callback_url, DROP COLUMN callback_secret_enc,
  DROP COLUMN callback_allow_private, DROP COLUMN callback_lease_until;
