-- +goose Up
-- Silences: matchers is a JSON array of {"name","value","regex","negate"}. A silence is
-- active from starts_at until ends_at, or until expired_at when someone expired it
-- early; ended_at is set once by the pass that ends it. approval is '' when none was
-- needed, else awaiting_approval, approved or rejected.
CREATE TABLE silences (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  matchers TEXT NOT NULL,
  starts_at DATETIME(6) NOT NULL,
  ends_at DATETIME(6) NOT NULL,
  comment VARCHAR(1000) NOT NULL DEFAULT '',
  created_by VARCHAR(128) NOT NULL DEFAULT '',
  api_key_id BIGINT NULL,
  on_end VARCHAR(16) CHARACTER SET ascii NOT NULL,
  expired_at DATETIME(6) NULL,
  expired_by VARCHAR(128) NOT NULL DEFAULT '',
  ended_at DATETIME(6) NULL,
  approval VARCHAR(32) CHARACTER SET ascii NOT NULL DEFAULT '',
  makers TEXT,
  decided_by VARCHAR(128) NOT NULL DEFAULT '',
  decided_at DATETIME(6) NULL,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  KEY idx_silences_ended (ended_at, ends_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Which silences hold (or held) a message: a message held by two waits for both.
CREATE TABLE message_silences (
  message_id CHAR(36) CHARACTER SET ascii NOT NULL,
  silence_id BIGINT NOT NULL,
  held_at DATETIME(6) NOT NULL,
  PRIMARY KEY (message_id, silence_id),
  KEY idx_message_silences_silence (silence_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE message_silences;
DROP TABLE silences;
