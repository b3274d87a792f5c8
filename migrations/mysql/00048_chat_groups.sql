-- +goose Up
-- Chat groups: a group chat Herald posts to as one recipient. account_id is the account
-- that posts (a group robot, or a WeCom or Feishu application whose group chat chat_id
-- names); mention is who a post @s unless the send says otherwise (on_duty or none);
-- fold says posts waiting for the robot's limit are folded into one; version moves with
-- every change, so an update is a compare-and-set on the version read.
CREATE TABLE chat_groups (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  account_id BIGINT NOT NULL,
  chat_id VARCHAR(128) NOT NULL DEFAULT '',
  mention VARCHAR(16) CHARACTER SET ascii NOT NULL DEFAULT 'none',
  fold TINYINT(1) NOT NULL DEFAULT 1,
  note VARCHAR(255) NOT NULL DEFAULT '',
  version INT NOT NULL DEFAULT 1,
  created_at DATETIME(6) NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  UNIQUE KEY uq_chat_groups_name (name),
  KEY idx_chat_groups_account (account_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE chat_groups;
