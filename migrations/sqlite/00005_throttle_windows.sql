-- +goose Up
-- Counters per key and fixed window of time: the password-guess throttle and audit
-- entries written at most once a window. A guess is counted before the password is
-- checked, which the failure log below (written after each check) could not do.
CREATE TABLE throttle_windows (
  throttle_key TEXT NOT NULL,
  window_start DATETIME NOT NULL,
  hits INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (throttle_key, window_start)
);
CREATE INDEX idx_throttle_windows_start ON throttle_windows (window_start);

DROP TABLE login_failures;

-- +goose Down
CREATE TABLE login_failures (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  username TEXT NOT NULL,
  ip TEXT NOT NULL,
  at DATETIME NOT NULL
);
CREATE INDEX idx_login_failures_username ON login_failures (username, at);
CREATE INDEX idx_login_failures_ip ON login_failures (ip, at);

DROP TABLE throttle_windows;
