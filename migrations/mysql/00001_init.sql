-- +goose Up
CREATE TABLE console_users (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  username VARCHAR(64) NOT NULL,
  password_hash VARCHAR(255) NOT NULL,
  role VARCHAR(16) NOT NULL,
  disabled BOOLEAN NOT NULL DEFAULT FALSE,
  password_changed_at DATETIME(6) NOT NULL,
  last_login_at DATETIME(6) NULL,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_console_users_username (username)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE console_sessions (
  id CHAR(64) CHARACTER SET ascii NOT NULL PRIMARY KEY,
  user_id BIGINT NOT NULL,
  ip VARCHAR(64) NOT NULL DEFAULT '',
  user_agent VARCHAR(255) NOT NULL DEFAULT '',
  created_at DATETIME(6) NOT NULL,
  last_seen_at DATETIME(6) NOT NULL,
  expires_at DATETIME(6) NOT NULL,
  KEY idx_console_sessions_user (user_id),
  KEY idx_console_sessions_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE login_failures (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  username VARCHAR(64) NOT NULL,
  ip VARCHAR(64) NOT NULL,
  at DATETIME(6) NOT NULL,
  KEY idx_login_failures_username (username, at),
  KEY idx_login_failures_ip (ip, at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE api_keys (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(100) NOT NULL,
  prefix VARCHAR(16) CHARACTER SET ascii NOT NULL,
  key_hash CHAR(64) CHARACTER SET ascii NOT NULL,
  scopes VARCHAR(64) NOT NULL,
  created_by VARCHAR(64) NOT NULL DEFAULT '',
  created_at DATETIME(6) NOT NULL,
  last_used_at DATETIME(6) NULL,
  revoked_at DATETIME(6) NULL,
  UNIQUE KEY uq_api_keys_prefix (prefix)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE recipients (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  external_id VARCHAR(64) NOT NULL,
  name VARCHAR(100) NOT NULL,
  org_type VARCHAR(16) NOT NULL,
  branch VARCHAR(100) NOT NULL DEFAULT '',
  department VARCHAR(100) NOT NULL DEFAULT '',
  tianyuan_id VARCHAR(128) NOT NULL DEFAULT '',
  zhaohu_id VARCHAR(128) NOT NULL DEFAULT '',
  wecom_userid VARCHAR(128) NOT NULL DEFAULT '',
  email VARCHAR(254) NOT NULL DEFAULT '',
  active BOOLEAN NOT NULL DEFAULT TRUE,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_recipients_external_id (external_id),
  KEY idx_recipients_org (org_type, active),
  KEY idx_recipients_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE duty_slots (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  weekday TINYINT NOT NULL,
  recipient_id BIGINT NOT NULL,
  created_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_duty_slots (weekday, recipient_id),
  KEY idx_duty_slots_recipient (recipient_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE duty_overrides (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  `date` CHAR(10) CHARACTER SET ascii NOT NULL,
  recipient_id BIGINT NOT NULL,
  action VARCHAR(8) NOT NULL,
  note VARCHAR(255) NOT NULL DEFAULT '',
  created_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_duty_overrides (`date`, recipient_id),
  KEY idx_duty_overrides_recipient (recipient_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE holidays (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  `date` CHAR(10) CHARACTER SET ascii NOT NULL,
  kind VARCHAR(16) NOT NULL,
  as_weekday TINYINT NULL,
  name VARCHAR(100) NOT NULL DEFAULT '',
  created_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_holidays_date (`date`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE templates (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  msg_type VARCHAR(16) NOT NULL,
  subject VARCHAR(255) NOT NULL DEFAULT '',
  body TEXT NOT NULL,
  variables VARCHAR(1000) NOT NULL DEFAULT '[]',
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_templates_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE accounts (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  platform VARCHAR(16) NOT NULL,
  is_default BOOLEAN NOT NULL DEFAULT FALSE,
  enabled BOOLEAN NOT NULL DEFAULT TRUE,
  allow_private_network BOOLEAN NOT NULL DEFAULT FALSE,
  max_attempts INT NOT NULL DEFAULT 3,
  config_enc TEXT NOT NULL,
  per_second INT NOT NULL DEFAULT 0,
  per_minute INT NOT NULL DEFAULT 0,
  per_hour INT NOT NULL DEFAULT 0,
  per_day INT NOT NULL DEFAULT 0,
  per_recipient_per_minute INT NOT NULL DEFAULT 0,
  per_recipient_per_day INT NOT NULL DEFAULT 0,
  retry_policy TEXT NULL,
  healthy BOOLEAN NOT NULL DEFAULT TRUE,
  health_note VARCHAR(255) NOT NULL DEFAULT '',
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_accounts_name (name),
  KEY idx_accounts_platform (platform, is_default)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE batches (
  id CHAR(36) CHARACTER SET ascii NOT NULL PRIMARY KEY,
  source VARCHAR(16) NOT NULL,
  actor VARCHAR(100) NOT NULL DEFAULT '',
  api_key_id BIGINT NULL,
  idempotency_key VARCHAR(128) NULL,
  request_hash CHAR(64) CHARACTER SET ascii NOT NULL DEFAULT '',
  platform VARCHAR(16) NOT NULL,
  account_id BIGINT NOT NULL,
  template_id BIGINT NULL,
  priority VARCHAR(8) NOT NULL,
  send_at DATETIME(6) NULL,
  to_on_duty BOOLEAN NOT NULL DEFAULT FALSE,
  requested INT NOT NULL DEFAULT 0,
  accepted INT NOT NULL DEFAULT 0,
  skipped_count INT NOT NULL DEFAULT 0,
  rejected_count INT NOT NULL DEFAULT 0,
  skipped TEXT NOT NULL,
  rejected TEXT NOT NULL,
  created_at DATETIME(6) NOT NULL,
  KEY idx_batches_idempotency (api_key_id, idempotency_key),
  KEY idx_batches_created (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE idempotency_keys (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  api_key_id BIGINT NOT NULL,
  idem_key VARCHAR(128) NOT NULL,
  request_hash CHAR(64) CHARACTER SET ascii NOT NULL,
  state VARCHAR(16) NOT NULL,
  status_code INT NOT NULL DEFAULT 0,
  response MEDIUMTEXT NULL,
  batch_id CHAR(36) CHARACTER SET ascii NULL,
  created_at DATETIME(6) NOT NULL,
  expires_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_idempotency (api_key_id, idem_key),
  KEY idx_idempotency_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE messages (
  id CHAR(36) CHARACTER SET ascii NOT NULL PRIMARY KEY,
  batch_id CHAR(36) CHARACTER SET ascii NOT NULL,
  recipient_id BIGINT NOT NULL,
  account_id BIGINT NOT NULL,
  platform VARCHAR(16) NOT NULL,
  address VARCHAR(254) NOT NULL,
  msg_type VARCHAR(16) NOT NULL,
  subject VARCHAR(255) NOT NULL DEFAULT '',
  content TEXT NOT NULL,
  priority VARCHAR(8) NOT NULL,
  status VARCHAR(16) NOT NULL,
  attempts INT NOT NULL DEFAULT 0,
  max_attempts INT NOT NULL DEFAULT 3,
  class_retries INT NOT NULL DEFAULT 0,
  send_at DATETIME(6) NOT NULL,
  next_attempt_at DATETIME(6) NULL,
  lease_until DATETIME(6) NULL,
  claim_token VARCHAR(32) CHARACTER SET ascii NOT NULL DEFAULT '',
  error_class VARCHAR(16) NOT NULL DEFAULT '',
  last_error VARCHAR(1000) NOT NULL DEFAULT '',
  provider_message_id VARCHAR(128) NOT NULL DEFAULT '',
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  sent_at DATETIME(6) NULL,
  KEY idx_messages_batch (batch_id),
  KEY idx_messages_due (status, next_attempt_at),
  KEY idx_messages_created (created_at),
  KEY idx_messages_recipient (recipient_id, created_at),
  KEY idx_messages_account (account_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE attempts (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  message_id CHAR(36) CHARACTER SET ascii NOT NULL,
  n INT NOT NULL,
  started_at DATETIME(6) NOT NULL,
  duration_ms INT NOT NULL,
  outcome VARCHAR(16) NOT NULL,
  error_class VARCHAR(16) NOT NULL DEFAULT '',
  provider_code VARCHAR(32) NOT NULL DEFAULT '',
  error VARCHAR(1000) NOT NULL DEFAULT '',
  KEY idx_attempts_message (message_id, n)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE audit_log (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  at DATETIME(6) NOT NULL,
  actor VARCHAR(100) NOT NULL,
  actor_type VARCHAR(16) NOT NULL,
  action VARCHAR(64) NOT NULL,
  target_type VARCHAR(32) NOT NULL DEFAULT '',
  target_id VARCHAR(64) NOT NULL DEFAULT '',
  detail TEXT NOT NULL,
  ip VARCHAR(64) NOT NULL DEFAULT '',
  KEY idx_audit_at (at),
  KEY idx_audit_actor (actor, at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

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
