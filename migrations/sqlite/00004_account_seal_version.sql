-- +goose Up
-- Which associated data an account's sealed config is bound to: 1 none (sealed before
-- binding existed), 2 the account's id and field. Herald re-seals version 1 rows when it
-- migrates, in Go: SQL cannot decrypt.
ALTER TABLE accounts ADD COLUMN seal_version INTEGER NOT NULL DEFAULT 1;

-- +goose Down
ALTER TABLE accounts DROP COLUMN seal_version;
