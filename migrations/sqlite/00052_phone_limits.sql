-- +goose Up
-- Per-person limits of 30 seconds and 10 minutes: Tencent Cloud allows one SMS or call
-- to a number in 30 seconds, and two calls in 10 minutes.
ALTER TABLE accounts ADD COLUMN per_recipient_per_30s INTEGER NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN per_recipient_per_10m INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE accounts DROP COLUMN per_recipient_per_10m;
ALTER TABLE accounts DROP COLUMN per_recipient_per_30s;
