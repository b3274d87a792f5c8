-- +goose Up
-- The Asynq task that carries a message: its own (the message id, or the message id and
-- what the task replaced) or a chunk task shared with other messages of its batch. The
-- sweeper asks Redis whether this task still exists before it enqueues the message again,
-- and the message page shows it.
ALTER TABLE messages ADD COLUMN task_id VARCHAR(128) CHARACTER SET ascii NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE messages DROP COLUMN task_id;
