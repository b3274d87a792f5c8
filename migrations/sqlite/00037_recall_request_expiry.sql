-- +goose Up
-- A batch recall waiting for approval expires when the earliest of its sent messages
-- passes its platform's recall window: approved later, the recall would fail for that
-- message and for every message sent before it. expires_at is that moment; a request
-- past it reads expired (status expired once someone acts on it).
ALTER TABLE recall_requests ADD COLUMN expires_at DATETIME NULL;

-- +goose Down
ALTER TABLE recall_requests DROP COLUMN expires_at;
