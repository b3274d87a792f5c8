-- +goose Up
-- Digests: a notice sent with a digest waits, pending with no due time and no task, in
-- the group named by digest_slot (its recipient, account and digest key). The group is
-- folded into one message when the first of its notices' windows closes (digest_due_at)
-- or when as many notices have gathered as the smallest max among them (digest_max);
-- each folded notice becomes digested, with digest_message_id naming the message that
-- carried it. A template may give its sends a digest by default (templates.digest, JSON).
ALTER TABLE messages ADD COLUMN digest_slot TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN digest_due_at DATETIME NULL;
ALTER TABLE messages ADD COLUMN digest_max INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN digest_message_id TEXT NULL;
-- The digest pass looks for pending notices by group.
CREATE INDEX idx_messages_digest ON messages (status, digest_slot, digest_due_at);
-- A digest's page lists the notices it carried.
CREATE INDEX idx_messages_digest_message ON messages (digest_message_id);
ALTER TABLE templates ADD COLUMN digest TEXT NOT NULL DEFAULT '';

-- +goose Down
DROP INDEX idx_messages_digest_message;
DROP INDEX idx_messages_digest;
ALTER TABLE templates DROP COLUMN digest;
ALTER TABLE messages DROP COLUMN digest_message_id;
ALTER TABLE messages DROP COLUMN digest_max;
ALTER TABLE messages DROP COLUMN digest_due_at;
ALTER TABLE messages DROP COLUMN digest_slot;
