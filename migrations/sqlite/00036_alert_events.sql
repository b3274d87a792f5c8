-- +goose Up
-- An alert's status event names its alert, the step and round it had reached, and who
-- acknowledged or resolved it (an external id or a console user; empty otherwise).
ALTER TABLE callback_events ADD COLUMN alert_id INTEGER NULL;
ALTER TABLE callback_events ADD COLUMN alert_step INTEGER NULL;
ALTER TABLE callback_events ADD COLUMN alert_round INTEGER NULL;
ALTER TABLE callback_events ADD COLUMN alert_by TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE callback_events DROP COLUMN alert_by;
ALTER TABLE callback_events DROP COLUMN alert_round;
ALTER TABLE callback_events DROP COLUMN alert_step;
ALTER TABLE callback_events DROP COLUMN alert_id;
