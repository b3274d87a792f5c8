-- +goose Up
-- Per-minute counts for the dashboard, so it never counts the messages table.
CREATE TABLE message_stats (
  minute DATETIME NOT NULL,
  account_id INTEGER NOT NULL,
  created INTEGER NOT NULL DEFAULT 0,
  sent INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  stopped INTEGER NOT NULL DEFAULT 0,
  cancelled INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (minute, account_id)
);

-- The dashboard lists the latest failed attempts.
CREATE INDEX idx_attempts_outcome ON attempts (outcome, id);

-- +goose Down
DROP INDEX idx_attempts_outcome;
DROP TABLE message_stats;
