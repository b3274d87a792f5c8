-- +goose Up
-- A template's name stays the Latin name the API calls it by; display_name is what the
-- console shows, in any language. Empty: the console shows the name.
ALTER TABLE templates ADD COLUMN display_name TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE templates DROP COLUMN display_name;
