-- +goose Up
-- The batch that carries a fired step's notices ('' for a step that called nobody, and
-- for the steps fired before this column): the alert page's timeline finds each
-- notice's step by it.
ALTER TABLE alert_steps ADD COLUMN batch_id TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE alert_steps DROP COLUMN batch_id;
