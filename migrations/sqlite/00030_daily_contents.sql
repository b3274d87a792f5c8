-- +goose Up
-- DingTalk delivers one content to one employee only once a calendar day and drops a
-- second copy while answering success. Intake records each notice it accepts for such
-- a platform here; the primary key makes a second identical notice to the same person
-- on the same day (Herald's time zone) fail to insert, so two requests racing each
-- other cannot both send it: the loser records it skipped, duplicate_content_today.
CREATE TABLE daily_contents (
  account_id INTEGER NOT NULL,
  address TEXT NOT NULL,
  day TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  message_id TEXT NOT NULL,
  created_at DATETIME NOT NULL,
  PRIMARY KEY (account_id, day, content_hash, address)
);

-- +goose Down
DROP TABLE daily_contents;
