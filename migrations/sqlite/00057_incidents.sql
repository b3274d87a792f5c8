-- +goose Up
-- Incidents: the alerts of one group key (the values of a route's group_by labels) that
-- an integration opened within the route's group_window. The first alert (alert_id) is
-- the incident's own and escalates; the others join it quietly. open_key is the
-- integration and group key while later alerts may still join (NULL once it ended or
-- its window passed): the compare-and-set that makes concurrent alerts one incident.
CREATE TABLE incidents (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  source TEXT NOT NULL,
  group_key TEXT NOT NULL,
  open_key TEXT,
  title TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL,
  alert_id INTEGER,
  alert_count INTEGER NOT NULL DEFAULT 0,
  storm_threshold INTEGER NOT NULL DEFAULT 0,
  window_ends_at DATETIME NOT NULL,
  storm_at DATETIME,
  opened_at DATETIME NOT NULL,
  acknowledged_by TEXT NOT NULL DEFAULT '',
  acknowledged_at DATETIME,
  resolved_by TEXT NOT NULL DEFAULT '',
  resolved_at DATETIME
);
CREATE UNIQUE INDEX uq_incidents_open_key ON incidents (open_key);
CREATE INDEX idx_incidents_state ON incidents (state, opened_at);

-- An alert's incident; flapping when its dedup key opened and recovered too often; the
-- notices a route lets it send an hour (notice_cap, 0 unbounded), how many it has sent
-- in the hour that began at notice_hour_at.
ALTER TABLE alerts ADD COLUMN incident_id INTEGER;
ALTER TABLE alerts ADD COLUMN flapping BOOLEAN NOT NULL DEFAULT 0;
ALTER TABLE alerts ADD COLUMN notice_cap INTEGER NOT NULL DEFAULT 0;
ALTER TABLE alerts ADD COLUMN notice_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE alerts ADD COLUMN notice_hour_at DATETIME;
CREATE INDEX idx_alerts_incident ON alerts (incident_id);
CREATE INDEX idx_alerts_key_opened ON alerts (source, dedup_key, opened_at);

-- +goose Down
DROP INDEX idx_alerts_key_opened;
DROP INDEX idx_alerts_incident;
ALTER TABLE alerts DROP COLUMN notice_hour_at;
ALTER TABLE alerts DROP COLUMN notice_count;
ALTER TABLE alerts DROP COLUMN notice_cap;
ALTER TABLE alerts DROP COLUMN flapping;
ALTER TABLE alerts DROP COLUMN incident_id;
DROP TABLE incidents;
