-- +goose Up
-- The calls of alerts: each call a step placed by voice (the message that carried it),
-- the step and round, whom it rang (external id), the step's advance_on_no_answer, and
-- what the provider reported (outcome: '' awaiting, answered, no_answer, busy, failed;
-- not_placed when the alert was taken or over first, with the reason) and the keys
-- pressed. A report that names the call by the provider's call id alone is matched
-- among the account's calls (idx_alert_calls_account).
CREATE TABLE alert_calls (
  message_id TEXT NOT NULL PRIMARY KEY,
  alert_id INTEGER NOT NULL,
  account_id INTEGER NOT NULL,
  step INTEGER NOT NULL,
  round INTEGER NOT NULL,
  advance BOOLEAN NOT NULL DEFAULT 0,
  person TEXT NOT NULL DEFAULT '',
  outcome TEXT NOT NULL DEFAULT '',
  keys_pressed TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  reported_at DATETIME,
  created_at DATETIME NOT NULL
);
CREATE INDEX idx_alert_calls_alert ON alert_calls (alert_id, outcome);
CREATE INDEX idx_alert_calls_account ON alert_calls (account_id, created_at);

-- +goose Down
DROP TABLE alert_calls;
