-- +goose Up
-- Staff's mobile numbers, for DingTalk's @ by mobile, SMS and voice calls: eleven digits
-- for a mainland number, or E.164 (+ and up to 15 digits); '' for none.
ALTER TABLE recipients ADD COLUMN mobile TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE recipients DROP COLUMN mobile;
