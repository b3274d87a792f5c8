-- +goose Up
CREATE TABLE console_users (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  username TEXT NOT NULL,
  password_hash TEXT NOT NULL,
  role TEXT NOT NULL,
  disabled BOOLEAN NOT NULL DEFAULT FALSE,
  password_changed_at DATETIME NOT NULL,
  last_login_at DATETIME NULL,
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_console_users_username ON console_users (username);

CREATE TABLE console_sessions (
  id TEXT NOT NULL PRIMARY KEY,
  user_id INTEGER NOT NULL,
  ip TEXT NOT NULL DEFAULT '',
  user_agent TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL,
  last_seen_at DATETIME NOT NULL,
  expires_at DATETIME NOT NULL
);
CREATE INDEX idx_console_sessions_user ON console_sessions (user_id);
CREATE INDEX idx_console_sessions_expires ON console_sessions (expires_at);

CREATE TABLE login_failures (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  username TEXT NOT NULL,
  ip TEXT NOT NULL,
  at DATETIME NOT NULL
);
CREATE INDEX idx_login_failures_username ON login_failures (username, at);
CREATE INDEX idx_login_failures_ip ON login_failures (ip, at);

CREATE TABLE api_keys (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  prefix TEXT NOT NULL,
  key_hash TEXT NOT NULL,
  scopes TEXT NOT NULL,
  created_by TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL,
  last_used_at DATETIME NULL,
  revoked_at DATETIME NULL
);
CREATE UNIQUE INDEX uq_api_keys_prefix ON api_keys (prefix);

CREATE TABLE recipients (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  external_id TEXT NOT NULL,
  name TEXT NOT NULL,
  org_type TEXT NOT NULL,
  branch TEXT NOT NULL DEFAULT '',
  department TEXT NOT NULL DEFAULT '',
  tianyuan_id TEXT NOT NULL DEFAULT '',
  zhaohu_id TEXT NOT NULL DEFAULT '',
  wecom_userid TEXT NOT NULL DEFAULT '',
  email TEXT NOT NULL DEFAULT '',
  active BOOLEAN NOT NULL DEFAULT TRUE,
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_recipients_external_id ON recipients (external_id);
CREATE INDEX idx_recipients_org ON recipients (org_type, active);
CREATE INDEX idx_recipients_name ON recipients (name);

CREATE TABLE duty_slots (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  weekday INTEGER NOT NULL,
  recipient_id INTEGER NOT NULL,
  created_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_duty_slots ON duty_slots (weekday, recipient_id);
CREATE INDEX idx_duty_slots_recipient ON duty_slots (recipient_id);

CREATE TABLE duty_overrides (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  "date" TEXT NOT NULL,
  recipient_id INTEGER NOT NULL,
  action TEXT NOT NULL,
  note TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_duty_overrides ON duty_overrides ("date", recipient_id);
CREATE INDEX idx_duty_overrides_recipient ON duty_overrides (recipient_id);

CREATE TABLE holidays (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  "date" TEXT NOT NULL,
  kind TEXT NOT NULL,
  as_weekday INTEGER NULL,
  name TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_holidays_date ON holidays ("date");

CREATE TABLE templates (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  msg_type TEXT NOT NULL,
  subject TEXT NOT NULL DEFAULT '',
  body TEXT NOT NULL,
  variables TEXT NOT NULL DEFAULT '[]',
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_templates_name ON templates (name);

CREATE TABLE accounts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  platform TEXT NOT NULL,
  is_default BOOLEAN NOT NULL DEFAULT FALSE,
  enabled BOOLEAN NOT NULL DEFAULT TRUE,
  allow_private_network BOOLEAN NOT NULL DEFAULT FALSE,
  max_attempts INTEGER NOT NULL DEFAULT 3,
  config_enc TEXT NOT NULL,
  per_second INTEGER NOT NULL DEFAULT 0,
  per_minute INTEGER NOT NULL DEFAULT 0,
  per_hour INTEGER NOT NULL DEFAULT 0,
  per_day INTEGER NOT NULL DEFAULT 0,
  per_recipient_per_minute INTEGER NOT NULL DEFAULT 0,
  per_recipient_per_day INTEGER NOT NULL DEFAULT 0,
  retry_policy TEXT NULL,
  healthy BOOLEAN NOT NULL DEFAULT TRUE,
  health_note TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_accounts_name ON accounts (name);
CREATE INDEX idx_accounts_platform ON accounts (platform, is_default);

CREATE TABLE batches (
  id TEXT NOT NULL PRIMARY KEY,
  source TEXT NOT NULL,
  actor TEXT NOT NULL DEFAULT '',
  api_key_id INTEGER NULL,
  idempotency_key TEXT NULL,
  request_hash TEXT NOT NULL DEFAULT '',
  platform TEXT NOT NULL,
  account_id INTEGER NOT NULL,
  template_id INTEGER NULL,
  priority TEXT NOT NULL,
  send_at DATETIME NULL,
  to_on_duty BOOLEAN NOT NULL DEFAULT FALSE,
  requested INTEGER NOT NULL DEFAULT 0,
  accepted INTEGER NOT NULL DEFAULT 0,
  skipped_count INTEGER NOT NULL DEFAULT 0,
  rejected_count INTEGER NOT NULL DEFAULT 0,
  skipped TEXT NOT NULL,
  rejected TEXT NOT NULL,
  created_at DATETIME NOT NULL
);
CREATE INDEX idx_batches_idempotency ON batches (api_key_id, idempotency_key);
CREATE INDEX idx_batches_created ON batches (created_at);

CREATE TABLE idempotency_keys (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  api_key_id INTEGER NOT NULL,
  idem_key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  state TEXT NOT NULL,
  status_code INTEGER NOT NULL DEFAULT 0,
  response TEXT NULL,
  batch_id TEXT NULL,
  created_at DATETIME NOT NULL,
  expires_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_idempotency ON idempotency_keys (api_key_id, idem_key);
CREATE INDEX idx_idempotency_expires ON idempotency_keys (expires_at);

CREATE TABLE messages (
  id TEXT NOT NULL PRIMARY KEY,
  batch_id TEXT NOT NULL,
  recipient_id INTEGER NOT NULL,
  account_id INTEGER NOT NULL,
  platform TEXT NOT NULL,
  address TEXT NOT NULL,
  msg_type TEXT NOT NULL,
  subject TEXT NOT NULL DEFAULT '',
  content TEXT NOT NULL,
  priority TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 3,
  class_retries INTEGER NOT NULL DEFAULT 0,
  send_at DATETIME NOT NULL,
  next_attempt_at DATETIME NULL,
  lease_until DATETIME NULL,
  claim_token TEXT NOT NULL DEFAULT '',
  error_class TEXT NOT NULL DEFAULT '',
  last_error TEXT NOT NULL DEFAULT '',
  provider_message_id TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL,
  sent_at DATETIME NULL
);
CREATE INDEX idx_messages_batch ON messages (batch_id);
CREATE INDEX idx_messages_due ON messages (status, next_attempt_at);
CREATE INDEX idx_messages_created ON messages (created_at);
CREATE INDEX idx_messages_recipient ON messages (recipient_id, created_at);
CREATE INDEX idx_messages_account ON messages (account_id, created_at);

CREATE TABLE attempts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  message_id TEXT NOT NULL,
  n INTEGER NOT NULL,
  started_at DATETIME NOT NULL,
  duration_ms INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  error_class TEXT NOT NULL DEFAULT '',
  provider_code TEXT NOT NULL DEFAULT '',
  error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX idx_attempts_message ON attempts (message_id, n);

CREATE TABLE audit_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at DATETIME NOT NULL,
  actor TEXT NOT NULL,
  actor_type TEXT NOT NULL,
  action TEXT NOT NULL,
  target_type TEXT NOT NULL DEFAULT '',
  target_id TEXT NOT NULL DEFAULT '',
  detail TEXT NOT NULL,
  ip TEXT NOT NULL DEFAULT ''
);
CREATE INDEX idx_audit_at ON audit_log (at);
CREATE INDEX idx_audit_actor ON audit_log (actor, at);

-- +goose Down
DROP TABLE audit_log;
DROP TABLE attempts;
DROP TABLE messages;
DROP TABLE idempotency_keys;
DROP TABLE batches;
DROP TABLE accounts;
DROP TABLE templates;
DROP TABLE holidays;
DROP TABLE duty_overrides;
DROP TABLE duty_slots;
DROP TABLE recipients;
DROP TABLE api_keys;
DROP TABLE login_failures;
DROP TABLE console_sessions;
DROP TABLE console_users;
