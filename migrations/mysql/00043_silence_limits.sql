-- +goose Up
-- version counts the edits of a silence's matchers: a worker compiles a silence once per
-- version. holds_key_id is the send key whose messages alone a silence holds (NULL: it
-- may hold anyone's, made by a person or an admin key). approval_reasons is a JSON
-- array of why a silence waits for a second person's approval.
ALTER TABLE silences
  ADD COLUMN version INT NOT NULL DEFAULT 1,
  ADD COLUMN holds_key_id BIGINT NULL,
  ADD COLUMN approval_reasons VARCHAR(255) CHARACTER SET ascii NOT NULL DEFAULT '[]';
-- The silences of one creator, for the cap on live silences and the chain of adjacent
-- silences that counts toward the 24-hour rule.
CREATE INDEX idx_silences_creator ON silences (created_by, ended_at);

-- +goose Down
DROP INDEX idx_silences_creator ON silences;
ALTER TABLE silences DROP COLUMN approval_reasons, DROP COLUMN holds_key_id, DROP COLUMN version;
