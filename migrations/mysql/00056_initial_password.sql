-- +goose Up
-- A user an admin created, or whose password an admin reset, must choose their own
-- password at their next sign-in: every console page sends them to the password form
-- until they do.
ALTER TABLE console_users ADD COLUMN must_change_password BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE console_users DROP COLUMN must_change_password;
