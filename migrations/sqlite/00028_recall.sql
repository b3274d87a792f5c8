-- +goose Up
-- Recall: a sent message taken back on its platform is recalled (terminal), with when
-- and by whom. A batch recall for more people than approval_threshold is a request that
-- waits for another person's decision, as a large send does: status awaiting_approval,
-- approved or rejected; result holds the counts per outcome once it ran.
ALTER TABLE messages ADD COLUMN recalled_at DATETIME NULL;
ALTER TABLE messages ADD COLUMN recalled_by TEXT NOT NULL DEFAULT '';

CREATE TABLE recall_requests (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  batch_id TEXT NOT NULL,
  requested_by TEXT NOT NULL,
  requester TEXT NOT NULL DEFAULT '',
  api_key_id INTEGER NULL,
  people INTEGER NOT NULL,
  status TEXT NOT NULL,
  decided_by TEXT NOT NULL DEFAULT '',
  decided_at DATETIME NULL,
  decision_note TEXT NOT NULL DEFAULT '',
  result TEXT NULL,
  created_at DATETIME NOT NULL
);
CREATE INDEX idx_recall_requests_batch ON recall_requests (batch_id, id);
CREATE INDEX idx_recall_requests_status ON recall_requests (status, created_at);

-- +goose Down
DROP TABLE recall_requests;
ALTER TABLE messages DROP COLUMN recalled_by;
ALTER TABLE messages DROP COLUMN recalled_at;
