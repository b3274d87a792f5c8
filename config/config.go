// Package config reads Herald's configuration from the environment once, at start, and
// validates it so that a bad value stops the process with a message a person can act on.
package config

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // HERALD_TIMEZONE must resolve on hosts without a zoneinfo database

	"github.com/go-sql-driver/mysql"
)

// Config is Herald's whole configuration. It is built once by Load and passed down;
// nothing reads the environment after that.
type Config struct {
	Addr     string
	DataDir  string
	MySQLDSN string
	RedisURL string
	// Redis is RedisURL parsed; nil when Herald runs its own in-process Redis.
	Redis         *Redis
	Location      *time.Location
	SessionSecret []byte
	SecretKey     []byte
	// SecretKeyPrevious (HERALD_SECRET_KEY_PREVIOUS, optional) is the key being
	// rotated out: credentials still sealed with it open, and are re-sealed with
	// SecretKey at start.
	SecretKeyPrevious []byte
	AdminUser         string
	AdminPassword     string
	WorkerConcurrency int
	// WorkerDBConns bounds the MySQL connections a process's sending uses
	// (HERALD_WORKER_DB_CONNS, default 4): a worker draining a backlog then leaves
	// the database room for the intake's transactions.
	WorkerDBConns     int
	TaskCheckInterval time.Duration
	// SendTimeout bounds one provider call (HERALD_SEND_TIMEOUT, default 15s).
	SendTimeout time.Duration
	// MetricsAddr is where /metrics is served on a listener of its own
	// (HERALD_METRICS_ADDR); empty for none.
	MetricsAddr string
	// MetricsToken is the bearer token /metrics requires (HERALD_METRICS_TOKEN); with
	// it, the console listener serves /metrics too. Empty for none.
	MetricsToken string
	// RedisPassword is the password of the in-process Redis: other local users can reach
	// its loopback port. It is generated into the data directory (redis.key) once and
	// reused; empty when HERALD_REDIS_URL is set.
	RedisPassword string
	// DefaultLanguage is the console's language for users who chose none and whose
	// browser asks for neither of the two (HERALD_DEFAULT_LANGUAGE: zh-CN or en).
	DefaultLanguage string
	// SessionIdle signs a console session out after this long unused
	// (HERALD_SESSION_IDLE, default 30m); 12 hours after sign-in it ends regardless.
	SessionIdle time.Duration
	// TrustedProxies are the addresses and CIDR ranges of the reverse proxies whose
	// X-Forwarded-For and X-Forwarded-Proto headers Herald believes
	// (HERALD_TRUSTED_PROXIES, comma-separated); none by default.
	TrustedProxies []string
	// PublicURL is the base of every link that leaves Herald (HERALD_PUBLIC_URL, e.g.
	// the acknowledgment links in alert notices): the address staff's phones reach.
	// Default http://<HERALD_ADDR>; never ends with a slash.
	PublicURL string
	// Demo seeds sample data into a new database. DemoSet reports whether HERALD_DEMO was
	// given explicitly; when it was not, demo data goes only into a new embedded database.
	Demo    bool
	DemoSet bool
	// SimulatorAddr and SimulatorSMTPAddr are where the serve command runs the platform
	// simulator in-process (HERALD_SIMULATOR_ADDR, HERALD_SIMULATOR_SMTP_ADDR; loopback
	// only, as its control API asks for no credentials): on the embedded default
	// 127.0.0.1:8026 and 127.0.0.1:2526, so a first try reaches WeCom, Feishu, DingTalk
	// and email through the demo's accounts; "" (set "off", or any MySQL install
	// without them) for none.
	SimulatorAddr, SimulatorSMTPAddr string
	// Knobs shorten built-in waits for tests (HERALD_TEST_KNOBS); zero in production.
	Knobs TestKnobs
}

// Languages are the console's languages HERALD_DEFAULT_LANGUAGE may name, the default
// first. They are the catalogs' languages (i18n.Languages; a test keeps the two lists
// alike): configuration imports none of Herald's packages.
var Languages = []string{"zh-CN", "en"}

// DefaultWorkerDBConns is HERALD_WORKER_DB_CONNS's default: with at most four of the
// worker's statements in MySQL at once, API requests at 1,000 a second beside a worker
// draining a backlog on two shared cores were accepted at a p99 of 31–49 ms instead of
// 89–95 ms with 16, the fan-out as fast; with two, the fan-out was a tenth slower
// (docs/benchmarks.md).
const DefaultWorkerDBConns = 4

// simulatorAddr reads one of the in-process simulator's addresses from name: embedded
// is the default's, "off" none, and anything else must be host:port on a loopback
// address.
func simulatorAddr(getenv Getenv, name string, embedded bool, byDefault string) (string, error) {
	v := strings.TrimSpace(getenv(name))
	switch {
	case v == "off":
		return "", nil
	case v == "" && embedded:
		return byDefault, nil
	case v == "":
		return "", nil
	}
	host, _, err := net.SplitHostPort(v)
	if err != nil {
		return "", &Error{name, fmt.Sprintf("%q is not host:port", v)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", &Error{name, fmt.Sprintf("%q is not a loopback address: the simulator's control API asks for no credentials", v)}
	}
	return v, nil
}

// Embedded reports whether Herald runs on its embedded backends (SQLite, in-process Redis).
func (c *Config) Embedded() bool { return c.MySQLDSN == "" }

// EmbeddedRedis reports whether Herald runs its own in-process Redis.
func (c *Config) EmbeddedRedis() bool { return c.RedisURL == "" }

// Error is a configuration problem with the variable it concerns.
type Error struct {
	Var string
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("config: %s: %s", e.Var, e.Msg) }

// Getenv is the lookup Load reads variables through; os.Getenv in production.
type Getenv func(string) string

// Load reads and validates the configuration. The first problem found is returned as *Error.
// In embedded mode, missing secrets are generated into the data directory (and reused later).
func Load(getenv Getenv) (*Config, error) {
	c := &Config{
		Addr:      orDefault(getenv("HERALD_ADDR"), "127.0.0.1:8080"),
		DataDir:   orDefault(getenv("HERALD_DATA_DIR"), "./data"),
		MySQLDSN:  strings.TrimSpace(getenv("HERALD_MYSQL_DSN")),
		RedisURL:  strings.TrimSpace(getenv("HERALD_REDIS_URL")),
		AdminUser: orDefault(getenv("HERALD_ADMIN_USER"), "admin"),
	}
	c.AdminPassword = getenv("HERALD_ADMIN_PASSWORD")

	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return nil, &Error{"HERALD_ADDR", fmt.Sprintf("%q is not host:port", c.Addr)}
	}
	c.MetricsAddr = strings.TrimSpace(getenv("HERALD_METRICS_ADDR"))
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			return nil, &Error{"HERALD_METRICS_ADDR", fmt.Sprintf("%q is not host:port", c.MetricsAddr)}
		}
		if c.MetricsAddr == c.Addr {
			return nil, &Error{"HERALD_METRICS_ADDR", "must differ from HERALD_ADDR; to serve /metrics there, set HERALD_METRICS_TOKEN instead"}
		}
	}
	var err error
	if c.SimulatorAddr, err = simulatorAddr(getenv, "HERALD_SIMULATOR_ADDR", c.Embedded(), "127.0.0.1:8026"); err != nil {
		return nil, err
	}
	if c.SimulatorSMTPAddr, err = simulatorAddr(getenv, "HERALD_SIMULATOR_SMTP_ADDR", c.Embedded(), "127.0.0.1:2526"); err != nil {
		return nil, err
	}
	c.MetricsToken = getenv("HERALD_METRICS_TOKEN")
	if c.MetricsToken != "" && (len(c.MetricsToken) < minSecretLen || strings.ContainsAny(c.MetricsToken, " \t\r\n")) {
		return nil, &Error{"HERALD_METRICS_TOKEN", fmt.Sprintf("must be at least %d characters without spaces (try: openssl rand -hex 32)", minSecretLen)}
	}
	if c.MySQLDSN != "" {
		dsn, err := mysql.ParseDSN(c.MySQLDSN)
		if err != nil {
			return nil, &Error{"HERALD_MYSQL_DSN", "cannot parse: " + err.Error()}
		}
		if dsn.DBName == "" {
			return nil, &Error{"HERALD_MYSQL_DSN", "names no database (…/herald?parseTime=true)"}
		}
		if !dsn.ParseTime {
			return nil, &Error{"HERALD_MYSQL_DSN", "must set parseTime=true"}
		}
	}
	if c.RedisURL != "" {
		var err error
		if c.Redis, err = ParseRedisURL(c.RedisURL); err != nil {
			return nil, &Error{"HERALD_REDIS_URL", strings.TrimPrefix(err.Error(), redisURLError)}
		}
	}
	tz := orDefault(getenv("HERALD_TIMEZONE"), "Asia/Shanghai")
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, &Error{"HERALD_TIMEZONE", fmt.Sprintf("unknown time zone %q", tz)}
	}
	c.Location = loc

	if c.WorkerConcurrency, err = positiveInt(getenv, "HERALD_WORKER_CONCURRENCY", 50); err != nil {
		return nil, err
	}
	if c.WorkerDBConns, err = positiveInt(getenv, "HERALD_WORKER_DB_CONNS", DefaultWorkerDBConns); err != nil {
		return nil, err
	}
	if c.TaskCheckInterval, err = positiveDuration(getenv, "HERALD_TASK_CHECK_INTERVAL", 10*time.Millisecond); err != nil {
		return nil, err
	}
	if c.SendTimeout, err = positiveDuration(getenv, "HERALD_SEND_TIMEOUT", 15*time.Second); err != nil {
		return nil, err
	}
	if c.SessionIdle, err = positiveDuration(getenv, "HERALD_SESSION_IDLE", 30*time.Minute); err != nil {
		return nil, err
	}
	// Last use is recorded to the minute, and a session lasts 12 hours at most.
	if c.SessionIdle < time.Minute || c.SessionIdle > 12*time.Hour {
		return nil, &Error{"HERALD_SESSION_IDLE", fmt.Sprintf("must be between 1m and 12h, got %s", c.SessionIdle)}
	}
	c.DefaultLanguage = Languages[0]
	if v := strings.TrimSpace(getenv("HERALD_DEFAULT_LANGUAGE")); v != "" {
		if !slices.Contains(Languages, v) {
			return nil, &Error{"HERALD_DEFAULT_LANGUAGE", fmt.Sprintf("must be one of %s, got %q", strings.Join(Languages, ", "), v)}
		}
		c.DefaultLanguage = v
	}
	if c.TrustedProxies, err = trustedProxies(getenv("HERALD_TRUSTED_PROXIES")); err != nil {
		return nil, err
	}
	if c.PublicURL, err = publicURL(getenv("HERALD_PUBLIC_URL"), c.Addr); err != nil {
		return nil, err
	}
	if v := strings.TrimSpace(getenv("HERALD_DEMO")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, &Error{"HERALD_DEMO", fmt.Sprintf("%q is not a boolean (use true or false)", v)}
		}
		c.Demo, c.DemoSet = b, true
	}

	if c.Knobs, err = testKnobs(getenv("HERALD_TEST_KNOBS")); err != nil {
		return nil, err
	}
	if c.SessionSecret, err = secret(getenv, c, "HERALD_SESSION_SECRET", "session.key"); err != nil {
		return nil, err
	}
	if c.SecretKey, err = secret(getenv, c, "HERALD_SECRET_KEY", "secret.key"); err != nil {
		return nil, err
	}
	if v := getenv("HERALD_SECRET_KEY_PREVIOUS"); v != "" {
		if len(v) < minSecretLen {
			return nil, &Error{"HERALD_SECRET_KEY_PREVIOUS", fmt.Sprintf("must be at least %d characters", minSecretLen)}
		}
		c.SecretKeyPrevious = []byte(v)
	}
	if c.EmbeddedRedis() {
		pw, err := loadOrCreateSecret(filepath.Join(c.DataDir, "redis.key"))
		if err != nil {
			return nil, &Error{"HERALD_DATA_DIR", "embedded Redis password: " + err.Error()}
		}
		c.RedisPassword = string(pw)
	}
	return c, nil
}

// minSecretLen is the shortest accepted secret: 32 characters, e.g. `openssl rand -hex 32`.
const minSecretLen = 32

// secret returns the variable's value, or in embedded mode the contents of a generated
// file in the data directory. Outside embedded mode the variable is required, because
// several processes must share it.
func secret(getenv Getenv, c *Config, name, file string) ([]byte, error) {
	if v := getenv(name); v != "" {
		if len(v) < minSecretLen {
			return nil, &Error{name, fmt.Sprintf("must be at least %d characters (try: openssl rand -hex 32)", minSecretLen)}
		}
		return []byte(v), nil
	}
	if !c.Embedded() {
		return nil, &Error{name, "required when HERALD_MYSQL_DSN is set (try: openssl rand -hex 32)"}
	}
	v, err := loadOrCreateSecret(filepath.Join(c.DataDir, file))
	if err != nil {
		return nil, &Error{name, err.Error()}
	}
	return v, nil
}

func loadOrCreateSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		v := strings.TrimSpace(string(b))
		if len(v) < minSecretLen {
			return nil, fmt.Errorf("%s holds fewer than %d characters", path, minSecretLen)
		}
		return []byte(v), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	v := hex.EncodeToString(raw)
	// Write a temporary file, then link it into place: linking fails if another process
	// got there first, and no process ever reads a half-written secret.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secret-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(v + "\n"); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return loadOrCreateSecret(path)
		}
		return nil, err
	}
	return []byte(v), nil
}

// trustedProxies reads HERALD_TRUSTED_PROXIES: addresses and CIDR ranges, separated
// by commas.
func trustedProxies(v string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		_, errPrefix := netip.ParsePrefix(s)
		_, errAddr := netip.ParseAddr(s)
		if errPrefix != nil && errAddr != nil {
			return nil, &Error{"HERALD_TRUSTED_PROXIES", fmt.Sprintf("%q is neither an IP address nor a CIDR range (e.g. 10.0.0.5, 10.0.0.0/24)", s)}
		}
		out = append(out, s)
	}
	return out, nil
}

// publicURL reads HERALD_PUBLIC_URL: an absolute http(s) URL, perhaps with a path
// (Herald behind a proxy under /herald), without query or fragment, since links are
// built by appending to it.
func publicURL(v, addr string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "http://" + addr, nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", &Error{"HERALD_PUBLIC_URL", fmt.Sprintf("%q is not an absolute http(s) URL (e.g. https://herald.example.com)", v)}
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", &Error{"HERALD_PUBLIC_URL", fmt.Sprintf("%q must have no query, fragment or user name: links are built by appending paths to it", v)}
	}
	return strings.TrimRight(v, "/"), nil
}

func positiveInt(getenv Getenv, name string, def int) (int, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, &Error{name, fmt.Sprintf("%q is not a whole number", v)}
	}
	if n <= 0 {
		return 0, &Error{name, fmt.Sprintf("must be positive, got %d", n)}
	}
	return n, nil
}

func positiveDuration(getenv Getenv, name string, def time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, &Error{name, fmt.Sprintf("%q is not a duration (e.g. 10ms)", v)}
	}
	if d <= 0 {
		return 0, &Error{name, fmt.Sprintf("must be positive, got %s", d)}
	}
	return d, nil
}

func orDefault(v, def string) string {
	if v = strings.TrimSpace(v); v == "" {
		return def
	}
	return v
}
