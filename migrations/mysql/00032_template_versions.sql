-- +goose Up
-- Every save of a template is kept as a numbered version that never changes, so Herald
-- can say which text a message was rendered from, pin a send to an older version, and
-- roll a bad edit back. templates.version counts the versions (raised in the saving
-- transaction, whose row lock serialises concurrent saves); messages record the one they
-- used.
CREATE TABLE template_versions (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  template_id BIGINT NOT NULL,
  number INT NOT NULL,
  actor VARCHAR(128) NOT NULL DEFAULT '',
  msg_type VARCHAR(16) NOT NULL,
  subject VARCHAR(255) NOT NULL DEFAULT '',
  body TEXT NOT NULL,
  html MEDIUMTEXT NOT NULL,
  variables VARCHAR(1000) NOT NULL DEFAULT '[]',
  fallback VARCHAR(64) NOT NULL DEFAULT '',
  created_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_template_versions (template_id, number)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
ALTER TABLE templates ADD COLUMN version INT NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN template_version INT NULL;
-- The templates saved before versions existed start at version 1, as they are now.
INSERT INTO template_versions (template_id, number, actor, msg_type, subject, body, html, variables, fallback, created_at)
  SELECT id, 1, '', msg_type, subject, body, html, variables, fallback, updated_at FROM templates;
UPDATE templates SET version = 1;

-- +goose Down
ALTER TABLE messages DROP COLUMN template_version;
ALTER TABLE templates DROP COLUMN version;
DROP TABLE template_versions;
