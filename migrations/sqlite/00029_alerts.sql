-- +goose Up
-- Escalation policies: steps is a JSON array of {"targets":[…],"wait":"10m"}; repeats is
-- how many more times the chain runs after its last step.
CREATE TABLE escalation_policies (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  steps TEXT NOT NULL,
  repeats INTEGER NOT NULL DEFAULT 0,
  notify_on_ack BOOLEAN NOT NULL DEFAULT 0,
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_escalation_policies_name ON escalation_policies (name);

-- Alerts: a batch that needs acknowledgment. policy_copy is the policy as it was when the
-- alert opened; the content columns are what every notice of the alert says.
CREATE TABLE alerts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  batch_id TEXT NOT NULL,
  policy TEXT NOT NULL,
  policy_copy TEXT NOT NULL,
  state TEXT NOT NULL,
  step INTEGER NOT NULL DEFAULT 0,
  round INTEGER NOT NULL DEFAULT 0,
  account_id INTEGER NOT NULL,
  template TEXT NOT NULL DEFAULT '',
  variables TEXT,
  subject TEXT NOT NULL DEFAULT '',
  text TEXT NOT NULL DEFAULT '',
  callback_key_id INTEGER,
  opened_at DATETIME NOT NULL,
  acknowledged_by TEXT NOT NULL DEFAULT '',
  acknowledged_via TEXT NOT NULL DEFAULT '',
  acknowledged_at DATETIME,
  resolved_by TEXT NOT NULL DEFAULT '',
  resolved_via TEXT NOT NULL DEFAULT '',
  resolved_at DATETIME,
  ended_at DATETIME
);
CREATE UNIQUE INDEX uq_alerts_batch ON alerts (batch_id);
CREATE INDEX idx_alerts_state ON alerts (state, opened_at);

-- One row per step of an alert, written when it becomes due next: firing is a
-- compare-and-set of fired_at, cancelling (on acknowledgment) of cancelled_at. targets
-- is a JSON array of the external ids the step notified.
CREATE TABLE alert_steps (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  alert_id INTEGER NOT NULL,
  n INTEGER NOT NULL,
  round INTEGER NOT NULL,
  due_at DATETIME NOT NULL,
  fired_at DATETIME,
  cancelled_at DATETIME,
  targets TEXT NOT NULL DEFAULT '[]',
  skipped_reason TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX uq_alert_steps ON alert_steps (alert_id, round, n);
CREATE INDEX idx_alert_steps_due ON alert_steps (fired_at, cancelled_at, due_at);

ALTER TABLE messages ADD COLUMN alert_id INTEGER;
CREATE INDEX idx_messages_alert ON messages (alert_id);

-- +goose Down
DROP INDEX idx_messages_alert;
ALTER TABLE messages DROP COLUMN alert_id;
DROP TABLE alert_steps;
DROP TABLE alerts;
DROP TABLE escalation_policies;
