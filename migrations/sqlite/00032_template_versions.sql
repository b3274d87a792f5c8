-- +goose Up
-- Every save of a template is kept as a numbered version that never changes, so Herald
-- can say which text a message was rendered from, pin a send to an older version, and
-- roll a bad edit back. templates.version counts the versions (raised in the saving
-- transaction, which serialises concurrent saves); messages record the one they used.
CREATE TABLE template_versions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  template_id INTEGER NOT NULL,
  number INTEGER NOT NULL,
  actor TEXT NOT NULL DEFAULT '',
  msg_type TEXT NOT NULL,
  subject TEXT NOT NULL DEFAULT '',
  body TEXT NOT NULL,
  html TEXT NOT NULL DEFAULT '',
  variables TEXT NOT NULL DEFAULT '[]',
  fallback TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_template_versions ON template_versions (template_id, number);
ALTER TABLE templates ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN template_version INTEGER NULL;
-- The templates saved before versions existed start at version 1, as they are now.
INSERT INTO template_versions (template_id, number, actor, msg_type, subject, body, html, variables, fallback, created_at)
  SELECT id, 1, '', msg_type, subject, body, html, variables, fallback, updated_at FROM templates;
UPDATE templates SET version = 1;

-- +goose Down
ALTER TABLE messages DROP COLUMN template_version;
ALTER TABLE templates DROP COLUMN version;
DROP TABLE template_versions;
