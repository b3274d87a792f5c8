-- +goose Up
-- A daily window, in HERALD_TIMEZONE, in which an account sends only high-priority
-- messages: "HH:MM-HH:MM" (it may run over midnight), or '' for none.
ALTER TABLE accounts ADD COLUMN quiet_hours VARCHAR(16) CHARACTER SET ascii NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE accounts DROP COLUMN quiet_hours;
