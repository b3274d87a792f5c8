-- +goose Up
-- The reports read ranges of time, never whole tables. The response report reads the
-- alerts opened in a range from this index alone; the interruptions report reads the
-- notices sent in a range, with whom they went to, from the second; the response report
-- by person or department finds whom each alert's notices went to from the third.
CREATE INDEX idx_alerts_report ON alerts (opened_at, policy, source, state, step, round, acknowledged_at, resolved_at);
CREATE INDEX idx_messages_sent_report ON messages (status, sent_at, recipient_id);
CREATE INDEX idx_messages_alert_recipient ON messages (alert_id, recipient_id);

-- +goose Down
DROP INDEX idx_messages_alert_recipient ON messages;
DROP INDEX idx_messages_sent_report ON messages;
DROP INDEX idx_alerts_report ON alerts;
