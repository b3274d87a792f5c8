-- +goose Up
-- The console's message list filters by status, platform or error class and pages
-- newest first on (created_at, id). Without these, a rare value (or one with no rows)
-- walks idx_messages_created row by row: EXPLAIN on 200k rows showed 2,400–10,000 rows
-- read per 51-row page, and a value with no rows read every row (0.40 s); with them a
-- page reads the rows it shows. account_id, recipient_id and created_at ranges are
-- served by the indexes of 00001; a batch holds at most 10,000 messages, so its sort
-- stays small.
CREATE INDEX idx_messages_status_created ON messages (status, created_at);
CREATE INDEX idx_messages_platform_created ON messages (platform, created_at);
CREATE INDEX idx_messages_error_created ON messages (error_class, created_at);

-- +goose Down
DROP INDEX idx_messages_error_created ON messages;
DROP INDEX idx_messages_platform_created ON messages;
DROP INDEX idx_messages_status_created ON messages;
