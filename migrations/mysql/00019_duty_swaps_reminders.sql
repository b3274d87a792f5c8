-- +goose Up
-- A shift swap: a_id gives their duty on a_date to b_id, who gives theirs on b_date
-- back. Its four overrides carry its id, so they are shown and undone together.
CREATE TABLE duty_swaps (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  a_id BIGINT NOT NULL,
  a_date CHAR(10) CHARACTER SET ascii NOT NULL,
  b_id BIGINT NOT NULL,
  b_date CHAR(10) CHARACTER SET ascii NOT NULL,
  note VARCHAR(255) NOT NULL DEFAULT '',
  created_by VARCHAR(128) NOT NULL DEFAULT '',
  created_at DATETIME(6) NOT NULL,
  KEY idx_duty_swaps_a_date (a_date),
  KEY idx_duty_swaps_b_date (b_date)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
ALTER TABLE duty_overrides ADD COLUMN swap_id BIGINT NULL, ADD KEY idx_duty_overrides_swap (swap_id);

-- The reminder to the people on duty on a date: one row a date, written in the same
-- transaction as the reminder's batch, so each date is reminded once whichever process
-- gets there first. batch_id is empty when nobody was on duty to remind.
CREATE TABLE duty_reminders (
  `date` CHAR(10) CHARACTER SET ascii NOT NULL PRIMARY KEY,
  batch_id CHAR(36) CHARACTER SET ascii NOT NULL DEFAULT '',
  created_at DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE duty_reminders;
ALTER TABLE duty_overrides DROP KEY idx_duty_overrides_swap, DROP COLUMN swap_id;
DROP TABLE duty_swaps;
