-- +goose Up
-- A per-person limit a second: Feishu takes at most 5 application messages a second to
-- one user.
ALTER TABLE accounts ADD COLUMN per_recipient_per_second INT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE accounts DROP COLUMN per_recipient_per_second;
