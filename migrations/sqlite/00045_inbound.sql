-- +goose Up
-- Integrations: a monitoring tool's way in. token_hash is the SHA-256 of the token the
-- tool presents (shown once, when the integration is made); routes and default_route
-- are JSON ({"matchers":[…],"policy","template","account","platform","priority",
-- "recipients":[…]}); mapping and value_map are a custom format's field mapping and
-- value map, JSON; language is the language of the notices Herald writes for a route
-- without a template.
CREATE TABLE integrations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  format TEXT NOT NULL,
  token_hash TEXT NOT NULL,
  routes TEXT NOT NULL,
  default_route TEXT,
  notify_on_resolve BOOLEAN NOT NULL DEFAULT 0,
  language TEXT NOT NULL DEFAULT 'zh-CN',
  mapping TEXT,
  value_map TEXT,
  created_by TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_integrations_name ON integrations (name);

-- What came in: each event an integration received, with what became of it (created,
-- deduplicated, resolved, unrouted, ignored, refused) and why, and the start of the body.
CREATE TABLE inbound_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  integration_id INTEGER NOT NULL,
  received_at DATETIME NOT NULL,
  outcome TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  dedup_key TEXT NOT NULL DEFAULT '',
  alert_id INTEGER,
  body TEXT
);
CREATE INDEX idx_inbound_events_integration ON inbound_events (integration_id, id);

-- The open alert of each integration's dedup key: taking the key is the compare-and-set
-- that makes concurrent duplicates one alert; it is let go when the alert ends.
CREATE TABLE inbound_keys (
  integration_id INTEGER NOT NULL,
  dedup_key TEXT NOT NULL,
  alert_id INTEGER,
  created_at DATETIME NOT NULL,
  PRIMARY KEY (integration_id, dedup_key)
);

-- Heartbeats: a job or a tool that must ping within its interval (plus grace); a missed
-- ping opens an alert through route (JSON), the next ping resolves it. days is "" (every
-- day) or "workdays" (pings expected on Herald's working days, make-up workdays
-- included). due_at is when the next ping is expected; missed_at is set, by
-- compare-and-set, by the check that opens the alert for a missed ping.
CREATE TABLE heartbeats (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  token_hash TEXT NOT NULL,
  interval_seconds INTEGER NOT NULL,
  grace_seconds INTEGER NOT NULL DEFAULT 0,
  days TEXT NOT NULL DEFAULT '',
  route TEXT NOT NULL,
  last_ping_at DATETIME,
  due_at DATETIME NOT NULL,
  missed_at DATETIME,
  alert_id INTEGER,
  created_by TEXT NOT NULL DEFAULT '',
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_heartbeats_name ON heartbeats (name);
CREATE INDEX idx_heartbeats_due ON heartbeats (missed_at, due_at);

-- An alert from a monitoring tool: the integration it came through (source), its dedup
-- key, labels (JSON) and severity, and how many events it has had, the last when.
ALTER TABLE alerts ADD COLUMN source TEXT NOT NULL DEFAULT '';
ALTER TABLE alerts ADD COLUMN dedup_key TEXT NOT NULL DEFAULT '';
ALTER TABLE alerts ADD COLUMN labels TEXT;
ALTER TABLE alerts ADD COLUMN severity TEXT NOT NULL DEFAULT '';
ALTER TABLE alerts ADD COLUMN event_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE alerts ADD COLUMN last_event_at DATETIME;
CREATE INDEX idx_alerts_source ON alerts (source, dedup_key);

-- +goose Down
DROP INDEX idx_alerts_source;
ALTER TABLE alerts DROP COLUMN last_event_at;
ALTER TABLE alerts DROP COLUMN event_count;
ALTER TABLE alerts DROP COLUMN severity;
ALTER TABLE alerts DROP COLUMN labels;
ALTER TABLE alerts DROP COLUMN dedup_key;
ALTER TABLE alerts DROP COLUMN source;
DROP TABLE heartbeats;
DROP TABLE inbound_keys;
DROP TABLE inbound_events;
DROP TABLE integrations;
