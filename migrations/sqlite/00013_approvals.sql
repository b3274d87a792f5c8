-- +goose Up
-- Maker-checker: a batch for more people than approval_threshold waits for another
-- person's decision. approval is '' for a batch that never needed one (open),
-- awaiting_approval, approved or rejected; an expired wait is rejected with the note
-- approval_expired.
ALTER TABLE batches ADD COLUMN approval TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN decided_by TEXT NOT NULL DEFAULT '';
ALTER TABLE batches ADD COLUMN decided_at DATETIME NULL;
ALTER TABLE batches ADD COLUMN decision_note TEXT NOT NULL DEFAULT '';
CREATE INDEX idx_batches_approval ON batches (approval, created_at);

-- Settings an admin changes at run time (approval_threshold), one row per name.
CREATE TABLE settings (
  name TEXT NOT NULL PRIMARY KEY,
  value TEXT NOT NULL,
  updated_by TEXT NOT NULL DEFAULT '',
  updated_at DATETIME NOT NULL
);

-- +goose Down
DROP TABLE settings;
DROP INDEX idx_batches_approval;
ALTER TABLE batches DROP COLUMN decision_note;
ALTER TABLE batches DROP COLUMN decided_at;
ALTER TABLE batches DROP COLUMN decided_by;
ALTER TABLE batches DROP COLUMN approval;
