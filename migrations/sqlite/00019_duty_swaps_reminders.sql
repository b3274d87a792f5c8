-- +goose Up
-- A shift swap: a_id gives their duty on a_date to b_id, who gives theirs on b_date
-- back. Its four overrides carry its id, so they are shown and undone together.
CREATE TABLE duty_swaps (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  a_id INTEGER NOT NULL,
  a_date TEXT NOT NULL,
  b_id INTEGER NOT NULL,
  b_date TEXT NOT NULL,
  note TEXT NOT NULL DEFAULT '',
  created_by TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL
);
CREATE INDEX idx_duty_swaps_a_date ON duty_swaps (a_date);
CREATE INDEX idx_duty_swaps_b_date ON duty_swaps (b_date);
ALTER TABLE duty_overrides ADD COLUMN swap_id INTEGER NULL;
CREATE INDEX idx_duty_overrides_swap ON duty_overrides (swap_id);

-- The reminder to the people on duty on a date: one row a date, written in the same
-- transaction as the reminder's batch, so each date is reminded once whichever process
-- gets there first. batch_id is empty when nobody was on duty to remind.
CREATE TABLE duty_reminders (
  date TEXT NOT NULL PRIMARY KEY,
  batch_id TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL
);

-- +goose Down
DROP TABLE duty_reminders;
DROP INDEX idx_duty_overrides_swap;
ALTER TABLE duty_overrides DROP COLUMN swap_id;
DROP TABLE duty_swaps;
