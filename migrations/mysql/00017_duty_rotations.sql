-- +goose Up
-- Rotations: a second source of the head-office roster beside the weekly table. members
-- is a JSON array of turns, each an array of recipient ids on duty together
-- ([[12],[13,14]]); weekdays a JSON array of ISO weekdays, used only when covers is
-- weekdays.
CREATE TABLE duty_rotations (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  members TEXT NOT NULL,
  start_date CHAR(10) CHARACTER SET ascii NOT NULL,
  turn_days INT NOT NULL,
  covers VARCHAR(16) CHARACTER SET ascii NOT NULL,
  weekdays VARCHAR(32) CHARACTER SET ascii NOT NULL DEFAULT '[]',
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_duty_rotations_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE duty_rotations;
