-- +goose Up
-- Per-key limits: how many recipients one request may name (0: the API's own limit) and
-- when the key stops working (NULL: never).
ALTER TABLE api_keys
  ADD COLUMN max_recipients_per_request INT NOT NULL DEFAULT 0,
  ADD COLUMN expires_at DATETIME(6) NULL;

-- +goose Down
ALTER TABLE api_keys DROP COLUMN max_recipients_per_request, DROP COLUMN expires_at;
