-- +goose Up
-- Rotations: a second source of the head-office roster beside the weekly table. members
-- is a JSON array of turns, each an array of recipient ids on duty together
-- ([[12],[13,14]]); weekdays a JSON array of ISO weekdays, used only when covers is
-- weekdays.
CREATE TABLE duty_rotations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  members TEXT NOT NULL,
  start_date TEXT NOT NULL,
  turn_days INTEGER NOT NULL,
  covers TEXT NOT NULL,
  weekdays TEXT NOT NULL DEFAULT '[]',
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_duty_rotations_name ON duty_rotations (name);

-- +goose Down
DROP TABLE duty_rotations;
