-- +goose Up
-- A per-person hourly limit: WeCom drops, without an error, application messages to one
-- member beyond 1,000 an hour.
ALTER TABLE accounts ADD COLUMN per_recipient_per_hour INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE accounts DROP COLUMN per_recipient_per_hour;
