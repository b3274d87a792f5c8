-- +goose Up
-- The console language each user chose: zh-CN, en, or empty to follow the browser.
ALTER TABLE console_users ADD COLUMN language VARCHAR(8) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE console_users DROP COLUMN language;
