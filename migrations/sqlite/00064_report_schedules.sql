-- +goose Up
-- Report schedules: a report sent as an ordinary notice every week (Monday 09:00) or
-- month (the 1st 09:00) in Herald's time zone. send is the send's recipients, groups and
-- account as JSON; last_period is the last period sent (weekly: its Monday, monthly:
-- YYYY-MM), moved by compare-and-set so that one process sends it once; version moves
-- with every change.
CREATE TABLE report_schedules (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  report TEXT NOT NULL,
  period TEXT NOT NULL,
  send TEXT NOT NULL,
  last_period TEXT NOT NULL DEFAULT '',
  created_by TEXT NOT NULL DEFAULT '',
  version INTEGER NOT NULL DEFAULT 1,
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);

-- +goose Down
DROP TABLE report_schedules;
