-- +goose Up
-- A template version can be retired: a send can no longer pin it, nor a rollback
-- restore it. retired_at and retired_by say when and by whom (NULL: in use).
ALTER TABLE template_versions ADD COLUMN retired_at DATETIME(6) NULL, ADD COLUMN retired_by VARCHAR(128) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE template_versions DROP COLUMN retired_at, DROP COLUMN retired_by;
