-- +goose Up
-- Each head-office person's secret duty calendar feed: only the SHA-256 of the token in
-- the feed's address is kept; a new token replaces the row, and the old address stops
-- working.
CREATE TABLE duty_feeds (
  recipient_id INTEGER NOT NULL PRIMARY KEY,
  token_hash TEXT NOT NULL,
  created_by TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_duty_feeds_token ON duty_feeds (token_hash);

-- +goose Down
DROP TABLE duty_feeds;
