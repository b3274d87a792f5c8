-- +goose Up
-- Maker-checker: a batch for more people than approval_threshold waits for another
-- person's decision. approval is '' for a batch that never needed one (open),
-- awaiting_approval, approved or rejected; an expired wait is rejected with the note
-- approval_expired.
ALTER TABLE batches
  ADD COLUMN approval VARCHAR(20) NOT NULL DEFAULT '',
  ADD COLUMN decided_by VARCHAR(128) NOT NULL DEFAULT '',
  ADD COLUMN decided_at DATETIME(6) NULL,
  ADD COLUMN decision_note VARCHAR(255) NOT NULL DEFAULT '';
CREATE INDEX idx_batches_approval ON batches (approval, created_at);

-- Settings an admin changes at run time (approval_threshold), one row per name.
CREATE TABLE settings (
  name VARCHAR(64) CHARACTER SET ascii NOT NULL PRIMARY KEY,
  value VARCHAR(255) NOT NULL,
  updated_by VARCHAR(128) NOT NULL DEFAULT '',
  updated_at DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE settings;
DROP INDEX idx_batches_approval ON batches;
ALTER TABLE batches DROP COLUMN approval, DROP COLUMN decided_by, DROP COLUMN decided_at, DROP COLUMN decision_note;
