-- +goose Up
-- An audit entry is an action code plus named parameters (JSON), so the console renders
-- it in the reader's language while the code stays searchable; detail keeps the words of
-- entries written before this column, and any free text an entry carries.
ALTER TABLE audit_log ADD COLUMN params TEXT NULL;

-- +goose Down
ALTER TABLE audit_log DROP COLUMN params;
