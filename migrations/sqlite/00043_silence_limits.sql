-- +goose Up
-- version counts the edits of a silence's matchers: a worker compiles a silence once per
-- version. holds_key_id is the send key whose messages alone a silence holds (NULL: it
-- may hold anyone's, made by a person or an admin key). approval_reasons is a JSON
-- array of why a silence waits for a second person's approval.
ALTER TABLE silences ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE silences ADD COLUMN holds_key_id INTEGER;
ALTER TABLE silences ADD COLUMN approval_reasons TEXT NOT NULL DEFAULT '[]';
-- The silences of one creator, for the cap on live silences and the chain of adjacent
-- silences that counts toward the 24-hour rule.
CREATE INDEX idx_silences_creator ON silences (created_by, ended_at);

-- +goose Down
DROP INDEX idx_silences_creator;
ALTER TABLE silences DROP COLUMN approval_reasons;
ALTER TABLE silences DROP COLUMN holds_key_id;
ALTER TABLE silences DROP COLUMN version;
