-- +goose Up
-- The calls of alerts: each call a step placed by voice (the message that carried it),
-- the step and round, whom it rang (external id), the step's advance_on_no_answer, and
-- what the provider reported (outcome: '' awaiting, answered, no_answer, busy, failed;
-- not_placed when the alert was taken or over first, with the reason) and the keys
-- pressed. A report that names the call by the provider's call id alone is matched
-- among the account's calls (idx_alert_calls_account).
CREATE TABLE alert_calls (
  message_id CHAR(36) CHARACTER SET ascii NOT NULL PRIMARY KEY,
  alert_id BIGINT NOT NULL,
  account_id BIGINT NOT NULL,
  step INT NOT NULL,
  round INT NOT NULL,
  advance TINYINT(1) NOT NULL DEFAULT 0,
  person VARCHAR(64) NOT NULL DEFAULT '',
  outcome VARCHAR(16) CHARACTER SET ascii NOT NULL DEFAULT '',
  keys_pressed VARCHAR(32) CHARACTER SET ascii NOT NULL DEFAULT '',
  reason VARCHAR(32) CHARACTER SET ascii NOT NULL DEFAULT '',
  reported_at DATETIME(6) NULL,
  created_at DATETIME(6) NOT NULL,
  KEY idx_alert_calls_alert (alert_id, outcome),
  KEY idx_alert_calls_account (account_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE alert_calls;
