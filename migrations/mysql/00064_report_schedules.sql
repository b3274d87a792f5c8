-- +goose Up
-- Report schedules: a report sent as an ordinary notice every week (Monday 09:00) or
-- month (the 1st 09:00) in Herald's time zone. send is the send's recipients, groups and
-- account as JSON; last_period is the last period sent (weekly: its Monday, monthly:
-- YYYY-MM), moved by compare-and-set so that one process sends it once; version moves
-- with every change.
CREATE TABLE report_schedules (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  report VARCHAR(16) CHARACTER SET ascii NOT NULL,
  period VARCHAR(8) CHARACTER SET ascii NOT NULL,
  send TEXT NOT NULL,
  last_period VARCHAR(10) CHARACTER SET ascii NOT NULL DEFAULT '',
  created_by VARCHAR(128) NOT NULL DEFAULT '',
  version INT NOT NULL DEFAULT 1,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE report_schedules;
