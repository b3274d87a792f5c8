-- +goose Up
-- One counter per kind of data that processes keep in memory: every change to the kind
-- adds one in the same transaction, so a process that reads the counter knows whether
-- what it holds is still current. recipients: the staff directory the intake reads.
CREATE TABLE change_counters (
  name TEXT NOT NULL PRIMARY KEY,
  version INTEGER NOT NULL DEFAULT 0
);
INSERT INTO change_counters (name, version) VALUES ('recipients', 0);

-- +goose Down
DROP TABLE change_counters;
