-- +goose Up
-- The interruptions report's tally of closed days: for each local date (in the time zone
-- named) and person, the notices delivered to them and the minutes of the day at which
-- an interruption began (comma-separated, ascending; one notice within a minute of the
-- one before joins its interruption, so a minute holds at most one start). A closed day
-- is written once, with its row in notice_days_tallied in the same transaction, which
-- also marks a day on which nobody was notified; the report sums these rows instead of
-- reading every notice of its range.
CREATE TABLE notice_days (
  zone VARCHAR(64) CHARACTER SET ascii NOT NULL,
  local_day CHAR(10) CHARACTER SET ascii NOT NULL,
  recipient_id BIGINT NOT NULL,
  notices INT NOT NULL,
  starts TEXT CHARACTER SET ascii NOT NULL,
  PRIMARY KEY (zone, local_day, recipient_id)
) ENGINE=InnoDB;

CREATE TABLE notice_days_tallied (
  zone VARCHAR(64) CHARACTER SET ascii NOT NULL,
  local_day CHAR(10) CHARACTER SET ascii NOT NULL,
  tallied_at DATETIME(6) NOT NULL,
  PRIMARY KEY (zone, local_day)
) ENGINE=InnoDB;

-- +goose Down
DROP TABLE notice_days_tallied;
DROP TABLE notice_days;
