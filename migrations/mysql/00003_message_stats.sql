-- +goose Up
-- Per-minute counts for the dashboard, so it never counts the messages table.
CREATE TABLE message_stats (
  minute DATETIME NOT NULL,
  account_id BIGINT NOT NULL,
  created INT NOT NULL DEFAULT 0,
  sent INT NOT NULL DEFAULT 0,
  failed INT NOT NULL DEFAULT 0,
  stopped INT NOT NULL DEFAULT 0,
  cancelled INT NOT NULL DEFAULT 0,
  PRIMARY KEY (minute, account_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The dashboard lists the latest failed attempts.
CREATE INDEX idx_attempts_outcome ON attempts (outcome, id);

-- +goose Down
DROP INDEX idx_attempts_outcome ON attempts;
DROP TABLE message_stats;
