-- +goose Up
-- Escalation policies: steps is a JSON array of {"targets":[…],"wait":"10m"}; repeats is
-- how many more times the chain runs after its last step.
CREATE TABLE escalation_policies (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  steps TEXT NOT NULL,
  repeats INT NOT NULL DEFAULT 0,
  notify_on_ack TINYINT(1) NOT NULL DEFAULT 0,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_escalation_policies_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Alerts: a batch that needs acknowledgment. policy_copy is the policy as it was when the
-- alert opened; the content columns are what every notice of the alert says.
CREATE TABLE alerts (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  batch_id CHAR(36) CHARACTER SET ascii NOT NULL,
  policy VARCHAR(64) NOT NULL,
  policy_copy TEXT NOT NULL,
  state VARCHAR(16) CHARACTER SET ascii NOT NULL,
  step INT NOT NULL DEFAULT 0,
  round INT NOT NULL DEFAULT 0,
  account_id BIGINT NOT NULL,
  template VARCHAR(128) NOT NULL DEFAULT '',
  variables MEDIUMTEXT,
  subject VARCHAR(255) NOT NULL DEFAULT '',
  text MEDIUMTEXT,
  callback_key_id BIGINT NULL,
  opened_at DATETIME(6) NOT NULL,
  acknowledged_by VARCHAR(128) NOT NULL DEFAULT '',
  acknowledged_via VARCHAR(16) NOT NULL DEFAULT '',
  acknowledged_at DATETIME(6) NULL,
  resolved_by VARCHAR(128) NOT NULL DEFAULT '',
  resolved_via VARCHAR(16) NOT NULL DEFAULT '',
  resolved_at DATETIME(6) NULL,
  ended_at DATETIME(6) NULL,
  UNIQUE KEY uq_alerts_batch (batch_id),
  KEY idx_alerts_state (state, opened_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- One row per step of an alert, written when it becomes due next: firing is a
-- compare-and-set of fired_at, cancelling (on acknowledgment) of cancelled_at. targets
-- is a JSON array of the external ids the step notified.
CREATE TABLE alert_steps (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  alert_id BIGINT NOT NULL,
  n INT NOT NULL,
  round INT NOT NULL,
  due_at DATETIME(6) NOT NULL,
  fired_at DATETIME(6) NULL,
  cancelled_at DATETIME(6) NULL,
  targets TEXT NOT NULL,
  skipped_reason VARCHAR(64) NOT NULL DEFAULT '',
  UNIQUE KEY uq_alert_steps (alert_id, round, n),
  KEY idx_alert_steps_due (fired_at, cancelled_at, due_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

ALTER TABLE messages ADD COLUMN alert_id BIGINT NULL, ADD KEY idx_messages_alert (alert_id);

-- +goose Down
ALTER TABLE messages DROP KEY idx_messages_alert, DROP COLUMN alert_id;
DROP TABLE alert_steps;
DROP TABLE alerts;
DROP TABLE escalation_policies;
