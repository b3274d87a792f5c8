-- +goose Up
-- Maker-checker that follows people, not actor strings: a batch records the people who
-- made it (the console user, the creator of the API key, or whoever last set up a duty
-- reminder), none of whom may approve it, and the template content it was created and
-- approved with, which its fallback messages render from. (SQLite compares usernames
-- byte for byte already.)
ALTER TABLE batches ADD COLUMN makers TEXT NULL;
ALTER TABLE batches ADD COLUMN template_content TEXT NULL;
-- The last change of a reminder's settings or template is looked up by action.
CREATE INDEX idx_audit_action ON audit_log (action, target_id);

-- +goose Down
DROP INDEX idx_audit_action;
ALTER TABLE batches DROP COLUMN template_content;
ALTER TABLE batches DROP COLUMN makers;
