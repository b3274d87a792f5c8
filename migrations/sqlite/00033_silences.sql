-- +goose Up
-- Silences: matchers is a JSON array of {"name","value","regex","negate"}. A silence is
-- active from starts_at until ends_at, or until expired_at when someone expired it
-- early; ended_at is set once by the pass that ends it. approval is '' when none was
-- needed, else awaiting_approval, approved or rejected.
CREATE TABLE silences (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  matchers TEXT NOT NULL,
  starts_at DATETIME NOT NULL,
  ends_at DATETIME NOT NULL,
  comment TEXT NOT NULL DEFAULT '',
  created_by TEXT NOT NULL DEFAULT '',
  api_key_id INTEGER,
  on_end TEXT NOT NULL,
  expired_at DATETIME,
  expired_by TEXT NOT NULL DEFAULT '',
  ended_at DATETIME,
  approval TEXT NOT NULL DEFAULT '',
  makers TEXT,
  decided_by TEXT NOT NULL DEFAULT '',
  decided_at DATETIME,
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);
CREATE INDEX idx_silences_ended ON silences (ended_at, ends_at);

-- Which silences hold (or held) a message: a message held by two waits for both.
CREATE TABLE message_silences (
  message_id TEXT NOT NULL,
  silence_id INTEGER NOT NULL,
  held_at DATETIME NOT NULL,
  PRIMARY KEY (message_id, silence_id)
);
CREATE INDEX idx_message_silences_silence ON message_silences (silence_id);

-- +goose Down
DROP TABLE message_silences;
DROP TABLE silences;
