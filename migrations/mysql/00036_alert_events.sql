-- +goose Up
-- An alert's status event names its alert, the step and round it had reached, and who
-- acknowledged or resolved it (an external id or a console user; empty otherwise).
ALTER TABLE callback_events
  ADD COLUMN alert_id BIGINT NULL,
  ADD COLUMN alert_step INT NULL,
  ADD COLUMN alert_round INT NULL,
  ADD COLUMN alert_by VARCHAR(128) NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE callback_events DROP COLUMN alert_by, DROP COLUMN alert_round, DROP COLUMN alert_step, DROP COLUMN alert_id;
