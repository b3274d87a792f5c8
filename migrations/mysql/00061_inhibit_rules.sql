-- +goose Up
-- Inhibition rules: while an open alert matches source (a JSON array of matchers), an
-- alert opening that matches target with the same values of the labels named in equal
-- (a JSON array) is inhibited.
CREATE TABLE inhibit_rules (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  source TEXT NOT NULL,
  target TEXT NOT NULL,
  equal_labels VARCHAR(1024) NOT NULL DEFAULT '[]',
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_inhibit_rules_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Alerts opened inhibited: the rule and the alert that inhibited each; state is
-- inhibited until released (the source ended: the alert's escalation starts) or ended
-- (the alert itself ended first).
CREATE TABLE alert_inhibitions (
  alert_id BIGINT NOT NULL PRIMARY KEY,
  rule_id BIGINT NOT NULL,
  rule_name VARCHAR(64) NOT NULL,
  source_alert_id BIGINT NOT NULL,
  state VARCHAR(16) CHARACTER SET ascii NOT NULL,
  inhibited_at DATETIME(6) NOT NULL,
  released_at DATETIME(6) NULL,
  KEY idx_alert_inhibitions_state (state, source_alert_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE alert_inhibitions;
DROP TABLE inhibit_rules;
