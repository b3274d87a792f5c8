-- +goose Up
-- Counters per key and fixed window of time: the password-guess throttle and audit
-- entries written at most once a window. A guess is counted before the password is
-- checked, which the failure log below (written after each check) could not do.
CREATE TABLE throttle_windows (
  throttle_key VARCHAR(100) NOT NULL,
  window_start DATETIME NOT NULL,
  hits INT NOT NULL DEFAULT 0,
  PRIMARY KEY (throttle_key, window_start),
  KEY idx_throttle_windows_start (window_start)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

DROP TABLE login_failures;

-- +goose Down
CREATE TABLE login_failures (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  username VARCHAR(64) NOT NULL,
  ip VARCHAR(64) NOT NULL,
  at DATETIME(6) NOT NULL,
  KEY idx_login_failures_username (username, at),
  KEY idx_login_failures_ip (ip, at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

DROP TABLE throttle_windows;
