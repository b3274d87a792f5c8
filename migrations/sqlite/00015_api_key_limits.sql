-- +goose Up
-- Per-key limits: how many recipients one request may name (0: the API's own limit) and
-- when the key stops working (NULL: never).
ALTER TABLE api_keys ADD COLUMN max_recipients_per_request INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN expires_at DATETIME NULL;

-- +goose Down
ALTER TABLE api_keys DROP COLUMN expires_at;
ALTER TABLE api_keys DROP COLUMN max_recipients_per_request;
