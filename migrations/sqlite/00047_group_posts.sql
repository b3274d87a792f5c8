-- +goose Up
-- A message can be a post to a group chat: chat_group_id names the chat group (NULL for
-- a message to one person), and mentions lists the people the post @s, as JSON ('' for
-- none).
ALTER TABLE messages ADD COLUMN chat_group_id INTEGER NULL;
ALTER TABLE messages ADD COLUMN mentions TEXT NOT NULL DEFAULT '';
CREATE INDEX idx_messages_chat_group ON messages (chat_group_id, created_at);

-- +goose Down
DROP INDEX idx_messages_chat_group;
ALTER TABLE messages DROP COLUMN mentions;
ALTER TABLE messages DROP COLUMN chat_group_id;
