-- +goose Up
-- Integrations: a monitoring tool's way in. token_hash is the SHA-256 of the token the
-- tool presents (shown once, when the integration is made); routes and default_route
-- are JSON ({"matchers":[…],"policy","template","account","platform","priority",
-- "recipients":[…]}); mapping and value_map are a custom format's field mapping and
-- value map, JSON; language is the language of the notices Herald writes for a route
-- without a template.
CREATE TABLE integrations (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  format VARCHAR(16) CHARACTER SET ascii NOT NULL,
  token_hash CHAR(64) CHARACTER SET ascii NOT NULL,
  routes MEDIUMTEXT NOT NULL,
  default_route TEXT NULL,
  notify_on_resolve TINYINT(1) NOT NULL DEFAULT 0,
  language VARCHAR(8) CHARACTER SET ascii NOT NULL DEFAULT 'zh-CN',
  mapping TEXT NULL,
  value_map TEXT NULL,
  created_by VARCHAR(128) NOT NULL DEFAULT '',
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_integrations_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- What came in: each event an integration received, with what became of it (created,
-- deduplicated, resolved, unrouted, ignored, refused) and why, and the start of the body.
CREATE TABLE inbound_events (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  integration_id BIGINT NOT NULL,
  received_at DATETIME(6) NOT NULL,
  outcome VARCHAR(16) CHARACTER SET ascii NOT NULL,
  reason VARCHAR(255) NOT NULL DEFAULT '',
  dedup_key VARCHAR(255) NOT NULL DEFAULT '',
  alert_id BIGINT NULL,
  body MEDIUMTEXT,
  KEY idx_inbound_events_integration (integration_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The open alert of each integration's dedup key: taking the key is the compare-and-set
-- that makes concurrent duplicates one alert; it is let go when the alert ends.
CREATE TABLE inbound_keys (
  integration_id BIGINT NOT NULL,
  dedup_key VARCHAR(255) NOT NULL,
  alert_id BIGINT NULL,
  created_at DATETIME(6) NOT NULL,
  PRIMARY KEY (integration_id, dedup_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Heartbeats: a job or a tool that must ping within its interval (plus grace); a missed
-- ping opens an alert through route (JSON), the next ping resolves it. days is "" (every
-- day) or "workdays" (pings expected on Herald's working days, make-up workdays
-- included). due_at is when the next ping is expected; missed_at is set, by
-- compare-and-set, by the check that opens the alert for a missed ping.
CREATE TABLE heartbeats (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  token_hash CHAR(64) CHARACTER SET ascii NOT NULL,
  interval_seconds INT NOT NULL,
  grace_seconds INT NOT NULL DEFAULT 0,
  days VARCHAR(16) CHARACTER SET ascii NOT NULL DEFAULT '',
  route TEXT NOT NULL,
  last_ping_at DATETIME(6) NULL,
  due_at DATETIME(6) NOT NULL,
  missed_at DATETIME(6) NULL,
  alert_id BIGINT NULL,
  created_by VARCHAR(128) NOT NULL DEFAULT '',
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_heartbeats_name (name),
  KEY idx_heartbeats_due (missed_at, due_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- An alert from a monitoring tool: the integration it came through (source), its dedup
-- key, labels (JSON) and severity, and how many events it has had, the last when.
ALTER TABLE alerts
  ADD COLUMN source VARCHAR(64) NOT NULL DEFAULT '',
  ADD COLUMN dedup_key VARCHAR(255) NOT NULL DEFAULT '',
  ADD COLUMN labels TEXT NULL,
  ADD COLUMN severity VARCHAR(16) CHARACTER SET ascii NOT NULL DEFAULT '',
  ADD COLUMN event_count INT NOT NULL DEFAULT 0,
  ADD COLUMN last_event_at DATETIME(6) NULL,
  ADD KEY idx_alerts_source (source, dedup_key);

-- +goose Down
ALTER TABLE alerts DROP KEY idx_alerts_source, DROP COLUMN last_event_at, DROP COLUMN event_count,
  DROP COLUMN severity, DROP COLUMN labels, DROP COLUMN dedup_key, DROP COLUMN source;
DROP TABLE heartbeats;
DROP TABLE inbound_keys;
DROP TABLE inbound_events;
DROP TABLE integrations;
