-- +goose Up
-- Each head-office person's secret duty calendar feed: only the SHA-256 of the token in
-- the feed's address is kept; a new token replaces the row, and the old address stops
-- working.
CREATE TABLE duty_feeds (
  recipient_id BIGINT NOT NULL PRIMARY KEY,
  token_hash CHAR(64) CHARACTER SET ascii NOT NULL,
  created_by VARCHAR(128) NOT NULL DEFAULT '',
  created_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_duty_feeds_token (token_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE duty_feeds;
