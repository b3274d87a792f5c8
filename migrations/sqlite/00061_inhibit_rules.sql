-- +goose Up
-- Inhibition rules: while an open alert matches source (a JSON array of matchers), an
-- alert opening that matches target with the same values of the labels named in equal
-- (a JSON array) is inhibited.
CREATE TABLE inhibit_rules (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  source TEXT NOT NULL,
  target TEXT NOT NULL,
  equal_labels TEXT NOT NULL DEFAULT '[]',
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);

-- Alerts opened inhibited: the rule and the alert that inhibited each; state is
-- inhibited until released (the source ended: the alert's escalation starts) or ended
-- (the alert itself ended first).
CREATE TABLE alert_inhibitions (
  alert_id INTEGER PRIMARY KEY,
  rule_id INTEGER NOT NULL,
  rule_name TEXT NOT NULL,
  source_alert_id INTEGER NOT NULL,
  state TEXT NOT NULL,
  inhibited_at DATETIME NOT NULL,
  released_at DATETIME
);
CREATE INDEX idx_alert_inhibitions_state ON alert_inhibitions (state, source_alert_id);

-- +goose Down
DROP TABLE alert_inhibitions;
DROP TABLE inhibit_rules;
