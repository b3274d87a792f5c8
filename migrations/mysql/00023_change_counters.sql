-- +goose Up
-- One counter per kind of data that processes keep in memory: every change to the kind
-- adds one in the same transaction, so a process that reads the counter knows whether
-- what it holds is still current. recipients: the staff directory the intake reads.
CREATE TABLE change_counters (
  name VARCHAR(64) CHARACTER SET ascii NOT NULL PRIMARY KEY,
  version BIGINT NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
INSERT INTO change_counters (name, version) VALUES ('recipients', 0);

-- +goose Down
DROP TABLE change_counters;
