-- +goose Up
-- Incidents: the alerts of one group key (the values of a route's group_by labels) that
-- an integration opened within the route's group_window. The first alert (alert_id) is
-- the incident's own and escalates; the others join it quietly. open_key is the
-- integration and group key while later alerts may still join (NULL once it ended or
-- its window passed): the compare-and-set that makes concurrent alerts one incident.
CREATE TABLE incidents (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  source VARCHAR(64) NOT NULL,
  group_key VARCHAR(512) NOT NULL,
  open_key VARCHAR(600) NULL,
  title VARCHAR(512) NOT NULL DEFAULT '',
  state VARCHAR(16) CHARACTER SET ascii NOT NULL,
  alert_id BIGINT NULL,
  alert_count INT NOT NULL DEFAULT 0,
  storm_threshold INT NOT NULL DEFAULT 0,
  window_ends_at DATETIME(6) NOT NULL,
  storm_at DATETIME(6) NULL,
  opened_at DATETIME(6) NOT NULL,
  acknowledged_by VARCHAR(128) NOT NULL DEFAULT '',
  acknowledged_at DATETIME(6) NULL,
  resolved_by VARCHAR(128) NOT NULL DEFAULT '',
  resolved_at DATETIME(6) NULL,
  UNIQUE KEY uq_incidents_open_key (open_key),
  KEY idx_incidents_state (state, opened_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- An alert's incident; flapping when its dedup key opened and recovered too often; the
-- notices a route lets it send an hour (notice_cap, 0 unbounded), how many it has sent
-- in the hour that began at notice_hour_at.
ALTER TABLE alerts
  ADD COLUMN incident_id BIGINT NULL,
  ADD COLUMN flapping TINYINT(1) NOT NULL DEFAULT 0,
  ADD COLUMN notice_cap INT NOT NULL DEFAULT 0,
  ADD COLUMN notice_count INT NOT NULL DEFAULT 0,
  ADD COLUMN notice_hour_at DATETIME(6) NULL,
  ADD KEY idx_alerts_incident (incident_id),
  ADD KEY idx_alerts_key_opened (source, dedup_key, opened_at);

-- +goose Down
ALTER TABLE alerts DROP KEY idx_alerts_key_opened, DROP KEY idx_alerts_incident, DROP COLUMN notice_hour_at,
  DROP COLUMN notice_count, DROP COLUMN notice_cap, DROP COLUMN flapping, DROP COLUMN incident_id;
DROP TABLE incidents;
