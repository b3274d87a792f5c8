-- +goose Up
-- Chat groups: a group chat Herald posts to as one recipient. account_id is the account
-- that posts (a group robot, or a WeCom or Feishu application whose group chat chat_id
-- names); mention is who a post @s unless the send says otherwise (on_duty or none);
-- fold says posts waiting for the robot's limit are folded into one; version moves with
-- every change, so an update is a compare-and-set on the version read.
CREATE TABLE chat_groups (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  account_id INTEGER NOT NULL,
  chat_id TEXT NOT NULL DEFAULT '',
  mention TEXT NOT NULL DEFAULT 'none',
  fold BOOLEAN NOT NULL DEFAULT 1,
  note TEXT NOT NULL DEFAULT '',
  version INTEGER NOT NULL DEFAULT 1,
  created_at DATETIME NOT NULL,
  updated_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX uq_chat_groups_name ON chat_groups (name);
CREATE INDEX idx_chat_groups_account ON chat_groups (account_id);

-- +goose Down
DROP TABLE chat_groups;
