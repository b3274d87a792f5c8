-- +goose Up
-- The console's message list filters by status, platform or error class and pages
-- newest first on (created_at, id); see the MySQL migration of the same number. SQLite
-- keeps the primary key out of secondary indexes of a rowid table, so id is listed to
-- make the index give the whole order.
CREATE INDEX idx_messages_status_created ON messages (status, created_at, id);
CREATE INDEX idx_messages_platform_created ON messages (platform, created_at, id);
CREATE INDEX idx_messages_error_created ON messages (error_class, created_at, id);

-- +goose Down
DROP INDEX idx_messages_error_created;
DROP INDEX idx_messages_platform_created;
DROP INDEX idx_messages_status_created;
