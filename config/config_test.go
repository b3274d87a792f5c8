package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// env is a Getenv backed by a map, so tests never read the process environment.
func env(vars map[string]string) Getenv {
	return func(name string) string { return vars[name] }
}

const (
	goodDSN     = "herald:pw@tcp(127.0.0.1:3306)/herald?parseTime=true&loc=UTC&charset=utf8mb4"
	goodSecret  = "0123456789abcdef0123456789abcdef0123456789abcdef"
	otherSecret = "fedcba9876543210fedcba9876543210fedcba9876543210"
)

func TestLoadRejectsBadValues(t *testing.T) {
	tests := []struct {
		name    string
		vars    map[string]string
		wantVar string
	}{
		{"unparsable dsn", map[string]string{"HERALD_MYSQL_DSN": "not a dsn@@"}, "HERALD_MYSQL_DSN"},
		{"dsn without database", map[string]string{"HERALD_MYSQL_DSN": "herald:pw@tcp(127.0.0.1:3306)/?parseTime=true"}, "HERALD_MYSQL_DSN"},
		{"dsn without parseTime", map[string]string{"HERALD_MYSQL_DSN": "herald:pw@tcp(127.0.0.1:3306)/herald?charset=utf8mb4"}, "HERALD_MYSQL_DSN"},
		{"unparsable redis url", map[string]string{"HERALD_REDIS_URL": "http://x"}, "HERALD_REDIS_URL"},
		{"sentinel url without master", map[string]string{"HERALD_REDIS_URL": "redis+sentinel://s1:26379,s2:26379"}, "HERALD_REDIS_URL"},
		{"unknown time zone", map[string]string{"HERALD_TIMEZONE": "Mars/Base"}, "HERALD_TIMEZONE"},
		{"negative concurrency", map[string]string{"HERALD_WORKER_CONCURRENCY": "-3"}, "HERALD_WORKER_CONCURRENCY"},
		{"zero concurrency", map[string]string{"HERALD_WORKER_CONCURRENCY": "0"}, "HERALD_WORKER_CONCURRENCY"},
		{"non-numeric concurrency", map[string]string{"HERALD_WORKER_CONCURRENCY": "abc"}, "HERALD_WORKER_CONCURRENCY"},
		{"zero worker connections", map[string]string{"HERALD_WORKER_DB_CONNS": "0"}, "HERALD_WORKER_DB_CONNS"},
		{"non-numeric worker connections", map[string]string{"HERALD_WORKER_DB_CONNS": "four"}, "HERALD_WORKER_DB_CONNS"},
		{"unparsable check interval", map[string]string{"HERALD_TASK_CHECK_INTERVAL": "fast"}, "HERALD_TASK_CHECK_INTERVAL"},
		{"negative check interval", map[string]string{"HERALD_TASK_CHECK_INTERVAL": "-1s"}, "HERALD_TASK_CHECK_INTERVAL"},
		{"non-boolean demo", map[string]string{"HERALD_DEMO": "maybe"}, "HERALD_DEMO"},
		{"simulator on a public address", map[string]string{"HERALD_SIMULATOR_ADDR": "0.0.0.0:8026"}, "HERALD_SIMULATOR_ADDR"},
		{"simulator smtp addr without port", map[string]string{"HERALD_SIMULATOR_SMTP_ADDR": "127.0.0.1"}, "HERALD_SIMULATOR_SMTP_ADDR"},
		{"unparsable session idle", map[string]string{"HERALD_SESSION_IDLE": "half an hour"}, "HERALD_SESSION_IDLE"},
		{"session idle under a minute", map[string]string{"HERALD_SESSION_IDLE": "30s"}, "HERALD_SESSION_IDLE"},
		{"session idle past the 12 h limit", map[string]string{"HERALD_SESSION_IDLE": "13h"}, "HERALD_SESSION_IDLE"},
		{"addr without port", map[string]string{"HERALD_ADDR": "nohost"}, "HERALD_ADDR"},
		{"metrics addr without port", map[string]string{"HERALD_METRICS_ADDR": "127.0.0.1"}, "HERALD_METRICS_ADDR"},
		{"metrics addr is the console's", map[string]string{"HERALD_METRICS_ADDR": "127.0.0.1:8080"}, "HERALD_METRICS_ADDR"},
		{"short metrics token", map[string]string{"HERALD_METRICS_TOKEN": "too-short"}, "HERALD_METRICS_TOKEN"},
		{"metrics token with a space", map[string]string{"HERALD_METRICS_TOKEN": goodSecret + " x"}, "HERALD_METRICS_TOKEN"},
		{"trusted proxy that is no address", map[string]string{"HERALD_TRUSTED_PROXIES": "127.0.0.1, proxy.internal"}, "HERALD_TRUSTED_PROXIES"},
		{"relative public url", map[string]string{"HERALD_PUBLIC_URL": "herald.example.com"}, "HERALD_PUBLIC_URL"},
		{"public url of another scheme", map[string]string{"HERALD_PUBLIC_URL": "ftp://herald.example.com"}, "HERALD_PUBLIC_URL"},
		{"public url without host", map[string]string{"HERALD_PUBLIC_URL": "https:///ack"}, "HERALD_PUBLIC_URL"},
		{"public url with a query", map[string]string{"HERALD_PUBLIC_URL": "https://herald.example.com/?x=1"}, "HERALD_PUBLIC_URL"},
		{"unknown test knob", map[string]string{"HERALD_TEST_KNOBS": "leese=2s"}, "HERALD_TEST_KNOBS"},
		{"test knob without a value", map[string]string{"HERALD_TEST_KNOBS": "lease"}, "HERALD_TEST_KNOBS"},
		{"test knob given twice", map[string]string{"HERALD_TEST_KNOBS": "lease=2s,lease=3s"}, "HERALD_TEST_KNOBS"},
		{"lease under a second", map[string]string{"HERALD_TEST_KNOBS": "lease=200ms"}, "HERALD_TEST_KNOBS"},
		{"lease longer than production", map[string]string{"HERALD_TEST_KNOBS": "lease=1m"}, "HERALD_TEST_KNOBS"},
		{"step wait of no duration", map[string]string{"HERALD_TEST_KNOBS": "step_wait=soon"}, "HERALD_TEST_KNOBS"},
		{"negative sweep grace", map[string]string{"HERALD_TEST_KNOBS": "sweep_grace=-1s"}, "HERALD_TEST_KNOBS"},
		{"retry scale of zero", map[string]string{"HERALD_TEST_KNOBS": "retry_scale=0"}, "HERALD_TEST_KNOBS"},
		{"retry scale that lengthens", map[string]string{"HERALD_TEST_KNOBS": "retry_scale=2"}, "HERALD_TEST_KNOBS"},
		{"short session secret", map[string]string{"HERALD_SESSION_SECRET": "too-short"}, "HERALD_SESSION_SECRET"},
		{"short secret key", map[string]string{"HERALD_SECRET_KEY": strings.Repeat("k", 31)}, "HERALD_SECRET_KEY"},
		{"short previous secret key", map[string]string{"HERALD_SECRET_KEY_PREVIOUS": strings.Repeat("k", 31)}, "HERALD_SECRET_KEY_PREVIOUS"},
		{"mysql without session secret", map[string]string{"HERALD_MYSQL_DSN": goodDSN}, "HERALD_SESSION_SECRET"},
		{"mysql without secret key", map[string]string{"HERALD_MYSQL_DSN": goodDSN, "HERALD_SESSION_SECRET": goodSecret}, "HERALD_SECRET_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"HERALD_DATA_DIR": t.TempDir()}
			for k, v := range tt.vars {
				vars[k] = v
			}
			c, err := Load(env(vars))
			if err == nil {
				t.Fatalf("Load succeeded with %v, want an error naming %s (config %+v)", tt.vars, tt.wantVar, c)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Load error is %T (%v), want *config.Error", err, err)
			}
			if ce.Var != tt.wantVar {
				t.Errorf("Load error names %s (%v), want %s", ce.Var, err, tt.wantVar)
			}
			if ce.Msg == "" {
				t.Errorf("Load error for %s has no message", ce.Var)
			}
		})
	}
}

func TestLoadDefaults(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(env(map[string]string{"HERALD_DATA_DIR": dir}))
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Addr, DataDir, Location, AdminUser string
		WorkerConcurrency, WorkerDBConns   int
		TaskCheckInterval, SessionIdle     time.Duration
		Embedded, EmbeddedRedis            bool
		Demo, DemoSet                      bool
		PublicURL                          string
	}
	want := summary{
		PublicURL: "http://127.0.0.1:8080",
		Addr:      "127.0.0.1:8080", DataDir: dir, Location: "Asia/Shanghai", AdminUser: "admin",
		WorkerConcurrency: 50, WorkerDBConns: 4, TaskCheckInterval: 10 * time.Millisecond, SessionIdle: 30 * time.Minute,
		Embedded: true, EmbeddedRedis: true,
	}
	got := summary{
		Addr: c.Addr, DataDir: c.DataDir, Location: c.Location.String(), AdminUser: c.AdminUser,
		WorkerConcurrency: c.WorkerConcurrency, WorkerDBConns: c.WorkerDBConns, TaskCheckInterval: c.TaskCheckInterval, SessionIdle: c.SessionIdle,
		Embedded: c.Embedded(), EmbeddedRedis: c.EmbeddedRedis(),
		Demo: c.Demo, DemoSet: c.DemoSet, PublicURL: c.PublicURL,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("default config mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadExplicitValues(t *testing.T) {
	c, err := Load(env(map[string]string{
		"HERALD_ADDR":                "0.0.0.0:9000",
		"HERALD_MYSQL_DSN":           goodDSN,
		"HERALD_REDIS_URL":           "redis://127.0.0.1:6379/0",
		"HERALD_TIMEZONE":            "Europe/Berlin",
		"HERALD_WORKER_CONCURRENCY":  "8",
		"HERALD_WORKER_DB_CONNS":     "2",
		"HERALD_TASK_CHECK_INTERVAL": "250ms",
		"HERALD_SESSION_IDLE":        "15m",
		"HERALD_SESSION_SECRET":      goodSecret,
		"HERALD_SECRET_KEY":          otherSecret,
		"HERALD_SECRET_KEY_PREVIOUS": goodSecret + "-previous",
		"HERALD_METRICS_ADDR":        "10.0.0.7:9100",
		"HERALD_METRICS_TOKEN":       goodSecret,
		"HERALD_TRUSTED_PROXIES":     " 127.0.0.1, 10.0.0.0/24 ,::1",
		"HERALD_PUBLIC_URL":          "https://herald.example.com/alerts/",
	}))
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Addr, Location            string
		WorkerConcurrency         int
		WorkerDBConns             int
		TaskCheckInterval         time.Duration
		SessionIdle               time.Duration
		Embedded, EmbeddedRedis   bool
		SessionSecret, SecretKey  string
		SecretKeyPrevious         string
		MetricsAddr, MetricsToken string
		TrustedProxies            []string
		PublicURL                 string
	}
	want := summary{
		Addr: "0.0.0.0:9000", Location: "Europe/Berlin", WorkerConcurrency: 8, WorkerDBConns: 2,
		TaskCheckInterval: 250 * time.Millisecond, SessionIdle: 15 * time.Minute, SessionSecret: goodSecret, SecretKey: otherSecret,
		SecretKeyPrevious: goodSecret + "-previous",
		MetricsAddr:       "10.0.0.7:9100", MetricsToken: goodSecret, TrustedProxies: []string{"127.0.0.1", "10.0.0.0/24", "::1"},
		PublicURL: "https://herald.example.com/alerts",
	}
	got := summary{
		Addr: c.Addr, Location: c.Location.String(), WorkerConcurrency: c.WorkerConcurrency, WorkerDBConns: c.WorkerDBConns,
		TaskCheckInterval: c.TaskCheckInterval, SessionIdle: c.SessionIdle, Embedded: c.Embedded(), EmbeddedRedis: c.EmbeddedRedis(),
		SessionSecret: string(c.SessionSecret), SecretKey: string(c.SecretKey), SecretKeyPrevious: string(c.SecretKeyPrevious),
		MetricsAddr: c.MetricsAddr, MetricsToken: c.MetricsToken, TrustedProxies: c.TrustedProxies,
		PublicURL: c.PublicURL,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadGeneratesSecretsInEmbeddedMode(t *testing.T) {
	// A data dir that does not exist yet: Load must create it.
	dir := filepath.Join(t.TempDir(), "data")
	vars := map[string]string{"HERALD_DATA_DIR": dir}
	first, err := Load(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	if len(first.SessionSecret) < minSecretLen || len(first.SecretKey) < minSecretLen {
		t.Fatalf("generated secrets are %d and %d characters, want at least %d",
			len(first.SessionSecret), len(first.SecretKey), minSecretLen)
	}
	if string(first.SessionSecret) == string(first.SecretKey) {
		t.Errorf("session secret and secret key are the same value %q", first.SessionSecret)
	}

	if len(first.RedisPassword) < minSecretLen {
		t.Fatalf("generated embedded Redis password is %d characters, want at least %d", len(first.RedisPassword), minSecretLen)
	}
	files := map[string][]byte{"session.key": first.SessionSecret, "secret.key": first.SecretKey, "redis.key": []byte(first.RedisPassword)}
	for name, want := range files {
		path := filepath.Join(dir, name)
		info, err := os.Stat(path)
		if err != nil {
			t.Fatalf("generated secret file: %v", err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, perm)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), strings.TrimSpace(string(b))); diff != "" {
			t.Errorf("%s does not hold the loaded secret (-want +got):\n%s", name, diff)
		}
	}

	second, err := Load(env(vars))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(first.SessionSecret), string(second.SessionSecret)); diff != "" {
		t.Errorf("second Load changed the session secret (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(string(first.SecretKey), string(second.SecretKey)); diff != "" {
		t.Errorf("second Load changed the secret key (-want +got):\n%s", diff)
	}
	if second.RedisPassword != first.RedisPassword {
		t.Errorf("second Load changed the embedded Redis password")
	}
	// With an external Redis there is no password to generate.
	external, err := Load(env(map[string]string{"HERALD_DATA_DIR": t.TempDir(), "HERALD_REDIS_URL": "redis://127.0.0.1:6379/0"}))
	if err != nil {
		t.Fatal(err)
	}
	if external.RedisPassword != "" {
		t.Errorf("RedisPassword %q with HERALD_REDIS_URL set, want none", external.RedisPassword)
	}
}

// Several processes may start at once on a new data dir (say, serve and migrate from one
// script). Each must end up with the same secrets, and none may fail.
func TestLoadConcurrentFirstStartsShareSecrets(t *testing.T) {
	const rounds, starters = 20, 8
	for round := range rounds {
		dir := filepath.Join(t.TempDir(), "data")
		configs := make([]*Config, starters)
		errs := make([]error, starters)
		var wg sync.WaitGroup
		for i := range starters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				configs[i], errs[i] = Load(env(map[string]string{"HERALD_DATA_DIR": dir}))
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: Load %d of %d concurrent first starts failed: %v", round, i+1, starters, err)
			}
		}
		for i, c := range configs[1:] {
			got := []string{string(c.SessionSecret), string(c.SecretKey)}
			want := []string{string(configs[0].SessionSecret), string(configs[0].SecretKey)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("round %d: start %d got other secrets than start 1 (-want +got):\n%s", round, i+2, diff)
			}
		}
	}
}

func TestLoadUsesExplicitSecretsInEmbeddedMode(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(env(map[string]string{
		"HERALD_DATA_DIR":       dir,
		"HERALD_SESSION_SECRET": goodSecret,
		"HERALD_SECRET_KEY":     otherSecret,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{goodSecret, otherSecret}, []string{string(c.SessionSecret), string(c.SecretKey)}); diff != "" {
		t.Errorf("secrets mismatch (-want +got):\n%s", diff)
	}
	for _, name := range []string{"session.key", "secret.key"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("data dir holds %s (%v), want none when the secrets are given", name, err)
		}
	}
}

func TestLoadRejectsShortSecretFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "session.key"), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(env(map[string]string{"HERALD_DATA_DIR": dir}))
	var ce *Error
	if !errors.As(err, &ce) || ce.Var != "HERALD_SESSION_SECRET" {
		t.Errorf("Load with a truncated session.key: error %v, want *config.Error for HERALD_SESSION_SECRET", err)
	}
}

// The in-process simulator runs on the embedded default's loopback ports unless turned
// off, and with MySQL only where asked for.
func TestLoadSimulatorAddrs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		vars       map[string]string
		http, smtp string
	}{
		{"embedded default", nil, "127.0.0.1:8026", "127.0.0.1:2526"},
		{"turned off", map[string]string{"HERALD_SIMULATOR_ADDR": "off", "HERALD_SIMULATOR_SMTP_ADDR": "off"}, "", ""},
		{"other ports", map[string]string{"HERALD_SIMULATOR_ADDR": "localhost:9000", "HERALD_SIMULATOR_SMTP_ADDR": "[::1]:2525"}, "localhost:9000", "[::1]:2525"},
		{"mysql", map[string]string{"HERALD_MYSQL_DSN": goodDSN, "HERALD_SESSION_SECRET": goodSecret, "HERALD_SECRET_KEY": goodSecret}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"HERALD_DATA_DIR": t.TempDir()}
			for k, v := range tc.vars {
				vars[k] = v
			}
			c, err := Load(env(vars))
			if err != nil {
				t.Fatal(err)
			}
			if c.SimulatorAddr != tc.http || c.SimulatorSMTPAddr != tc.smtp {
				t.Errorf("simulator at %q and %q, want %q and %q", c.SimulatorAddr, c.SimulatorSMTPAddr, tc.http, tc.smtp)
			}
		})
	}
}

func TestLoadDemo(t *testing.T) {
	tests := []struct {
		value         string
		demo, demoSet bool
	}{
		{"", false, false},
		{"false", false, true},
		{"true", true, true},
		{"1", true, true},
		{"0", false, true},
	}
	for _, tt := range tests {
		t.Run("HERALD_DEMO="+tt.value, func(t *testing.T) {
			c, err := Load(env(map[string]string{"HERALD_DATA_DIR": t.TempDir(), "HERALD_DEMO": tt.value}))
			if err != nil {
				t.Fatal(err)
			}
			want := []bool{tt.demo, tt.demoSet}
			if diff := cmp.Diff(want, []bool{c.Demo, c.DemoSet}); diff != "" {
				t.Errorf("[Demo DemoSet] mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLoadTestKnobs reads every knob, keeps production values for the absent ones, and
// tells a zero sweep grace from none.
func TestLoadTestKnobs(t *testing.T) {
	c, err := Load(env(map[string]string{"HERALD_DATA_DIR": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Knobs.Set() {
		t.Errorf("knobs set without HERALD_TEST_KNOBS: %+v", c.Knobs)
	}
	c, err = Load(env(map[string]string{"HERALD_DATA_DIR": t.TempDir(),
		"HERALD_TEST_KNOBS": " lease=2s, step_wait=1s,retry_scale=0.1,sweep_every=5s,sweep_grace=0s,idle_after=2s,idle_check=50ms"}))
	if err != nil {
		t.Fatal(err)
	}
	want := TestKnobs{Lease: 2 * time.Second, StepWait: time.Second, RetryScale: 0.1, SweepEvery: 5 * time.Second, SweepGraceSet: true, IdleAfter: 2 * time.Second,
		IdleCheck: 50 * time.Millisecond}
	if diff := cmp.Diff(want, c.Knobs); diff != "" {
		t.Errorf("knobs (-want +got):\n%s", diff)
	}
	if got, want := c.Knobs.String(), "lease=2s,step_wait=1s,sweep_every=5s,sweep_grace=0s,idle_after=2s,idle_check=50ms,retry_scale=0.1"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
