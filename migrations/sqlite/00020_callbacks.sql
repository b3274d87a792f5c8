-- +goose Up
-- Status callbacks. An API key may name a callback URL and a signing secret (sealed like
-- account credentials); a message created through such a key carries the key's id, and
-- its batch counts how many of those messages are not final yet (batch.completed fires
-- when that count reaches zero). Events wait in an outbox written in the transaction of
-- the state change that causes them; seq orders them.
ALTER TABLE api_keys ADD COLUMN callback_url TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN callback_secret_enc TEXT NULL;
ALTER TABLE api_keys ADD COLUMN callback_allow_private BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE api_keys ADD COLUMN callback_lease_until DATETIME NULL;
ALTER TABLE messages ADD COLUMN callback_key_id INTEGER NULL;
ALTER TABLE batches ADD COLUMN callback_open INTEGER NOT NULL DEFAULT 0;
CREATE TABLE callback_events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL,
  api_key_id INTEGER NOT NULL,
  type TEXT NOT NULL,
  message_id TEXT NULL,
  batch_id TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT '',
  error_class TEXT NOT NULL DEFAULT '',
  occurred_at DATETIME NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at DATETIME NOT NULL,
  last_error TEXT NOT NULL DEFAULT '',
  delivered_at DATETIME NULL
);
CREATE UNIQUE INDEX uq_callback_events_id ON callback_events (id);
CREATE INDEX idx_callback_events_due ON callback_events (state, next_attempt_at);
CREATE INDEX idx_callback_events_key ON callback_events (api_key_id, seq);

-- +goose Down
DROP TABLE callback_events;
ALTER TABLE batches DROP COLUMN callback_open;
ALTER TABLE messages DROP COLUMN callback_key_id;
ALTER TABLE api_keys DROP COLUMN callback_lease_until;
ALTER TABLE api_keys DROP COLUMN callback_allow_private;
ALTER TABLE api_keys DROP COLUMN callback_secret_enc;
ALTER TABLE api_keys DROP COLUMN callback_url;
