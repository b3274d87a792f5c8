-- +goose Up
-- Recall: a sent message taken back on its platform is recalled (terminal), with when
-- and by whom. A batch recall for more people than approval_threshold is a request that
-- waits for another person's decision, as a large send does: status awaiting_approval,
-- approved or rejected; result holds the counts per outcome once it ran.
ALTER TABLE messages
  ADD COLUMN recalled_at DATETIME(6) NULL,
  ADD COLUMN recalled_by VARCHAR(128) NOT NULL DEFAULT '';

CREATE TABLE recall_requests (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  batch_id VARCHAR(36) CHARACTER SET ascii NOT NULL,
  requested_by VARCHAR(128) NOT NULL,
  requester VARCHAR(64) NOT NULL DEFAULT '',
  api_key_id BIGINT NULL,
  people INT NOT NULL,
  status VARCHAR(20) NOT NULL,
  decided_by VARCHAR(128) NOT NULL DEFAULT '',
  decided_at DATETIME(6) NULL,
  decision_note VARCHAR(255) NOT NULL DEFAULT '',
  result TEXT NULL,
  created_at DATETIME(6) NOT NULL,
  KEY idx_recall_requests_batch (batch_id, id),
  KEY idx_recall_requests_status (status, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- +goose Down
DROP TABLE recall_requests;
ALTER TABLE messages DROP COLUMN recalled_at, DROP COLUMN recalled_by;
