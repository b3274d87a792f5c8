-- +goose Up
-- DingTalk delivers one content to one employee only once a calendar day and drops a
-- second copy while answering success. Intake records each notice it accepts for such
-- a platform here; the primary key makes a second identical notice to the same person
-- on the same day (Herald's time zone) fail to insert, so two requests racing each
-- other cannot both send it: the loser records it skipped, duplicate_content_today.
CREATE TABLE daily_contents (
  account_id BIGINT NOT NULL,
  address VARCHAR(254) NOT NULL,
  `day` CHAR(10) CHARACTER SET ascii NOT NULL,
  content_hash CHAR(64) CHARACTER SET ascii NOT NULL,
  message_id CHAR(36) CHARACTER SET ascii NOT NULL,
  created_at DATETIME(6) NOT NULL,
  PRIMARY KEY (account_id, `day`, content_hash, address)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE daily_contents;
