-- +goose Up
-- Maker-checker that follows people, not actor strings: a batch records the people who
-- made it (the console user, the creator of the API key, or whoever last set up a duty
-- reminder), none of whom may approve it, and the template content it was created and
-- approved with, which its fallback messages render from. Usernames compare byte for
-- byte: a case- and accent-insensitive collation let lookalikes (ädmin, ＡＤＭＩＮ) match
-- admin.
ALTER TABLE batches ADD COLUMN makers TEXT NULL, ADD COLUMN template_content TEXT NULL;
ALTER TABLE console_users MODIFY username VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;
-- The last change of a reminder's settings or template is looked up by action.
CREATE INDEX idx_audit_action ON audit_log (action, target_id);

-- +goose Down
DROP INDEX idx_audit_action ON audit_log;
ALTER TABLE console_users MODIFY username VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL;
ALTER TABLE batches DROP COLUMN makers, DROP COLUMN template_content;
