// Package harness starts Herald for the end-to-end tests (test/e2e) and the benchmarks
// (bench): in this process or as processes of the real binary, with the simulator, the
// HTTP clients that drive the console and the API, and the rigs both measure with.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"herald/config"
	"herald/internal/app"
	"herald/internal/testenv"
)

// AdminPassword is the first admin's password in the environments the harness builds.
const AdminPassword = "correct-horse-battery"

// TestEnv returns the environment of a Herald process for a test: production mode
// (MySQL + Redis) when the test backends are configured, the embedded default otherwise.
// The console speaks English unless a test asks for Chinese (the tests of the Chinese
// console set the language themselves).
func TestEnv(t testing.TB) map[string]string {
	env := map[string]string{
		"HERALD_DATA_DIR":         t.TempDir(),
		"HERALD_ADMIN_PASSWORD":   AdminPassword,
		"HERALD_TIMEZONE":         "Asia/Shanghai",
		"HERALD_DEFAULT_LANGUAGE": "en",
		// The in-process simulator's fixed ports are the first try's: tests run many
		// processes at once, and one that wants it gives it addresses of its own.
		"HERALD_SIMULATOR_ADDR":      "off",
		"HERALD_SIMULATOR_SMTP_ADDR": "off",
		// An idle worker looks for a task once a second, and stopping it waits out that
		// look's sleep; tests start and stop Herald hundreds of times. Tests that set
		// knobs of their own go without it.
		"HERALD_TEST_KNOBS": "idle_check=50ms",
	}
	if dsn := testenv.MySQLDSN(t); dsn != "" {
		env["HERALD_MYSQL_DSN"] = dsn
		env["HERALD_SESSION_SECRET"] = "test-session-secret-0123456789abcdef"
		env["HERALD_SECRET_KEY"] = "test-secret-key-0123456789abcdef0123"
		env["HERALD_DEMO"] = "true"
	}
	if os.Getenv("HERALD_TEST_REDIS_URL") != "" {
		env["HERALD_REDIS_URL"] = testenv.RedisURL(t)
	}
	return env
}

// Running is a Herald process started in the test.
type Running struct {
	App    *app.App
	URL    string        // the console's base URL
	Stdout *bytes.Buffer // what the process printed
	Stop   func()        // stops the process and waits for it; again is a no-op
}

// StartHerald starts Herald with role all on a random loopback port.
func StartHerald(t testing.TB, env map[string]string, configure ...func(*app.App)) *Running {
	t.Helper()
	return StartHeraldAs(t, env, "all", configure...)
}

// SweepAtOnce makes the sweeper re-enqueue due messages without the usual grace.
func SweepAtOnce(a *app.App) { a.SweepGrace = 0 }

// StartHeraldAs starts Herald in one role; roles other than all need MySQL and Redis.
// The configure functions adjust the process before it runs.
func StartHeraldAs(t testing.TB, env map[string]string, role string, configure ...func(*app.App)) *Running {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &bytes.Buffer{}
	log, _ := app.NewLogger(cfg, io.Discard)
	a, err := app.New(ctx, cfg, role, log, out)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.Listener = ln
	for _, f := range configure {
		f(a)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	r := &Running{App: a, URL: "http://" + ln.Addr().String(), Stdout: out}
	stopped := false
	r.Stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("herald stopped with: %v", err)
		}
	}
	t.Cleanup(r.Stop)
	return r
}

// Browser is an HTTP client with a cookie jar that does not follow redirects.
type Browser struct {
	t      testing.TB
	Base   string
	Client *http.Client
}

// NewBrowser returns a browser on the console at base, signed in as no one.
func NewBrowser(t testing.TB, base string) *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{t: t, Base: base, Client: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Do sends a request with the form (if any) and the headers given, and returns the
// response with its body read.
func (b *Browser) Do(method, path string, form url.Values, header map[string]string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.Base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.Client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp, string(text)
}

// Get requests path.
func (b *Browser) Get(path string) (*http.Response, string) { return b.Do("GET", path, nil, nil) }

// Post sends form to path.
func (b *Browser) Post(path string, form url.Values) (*http.Response, string) {
	return b.Do("POST", path, form, nil)
}

// Login signs in, failing the test unless the console accepts the password.
func (b *Browser) Login(username, password string) {
	b.t.Helper()
	resp, body := b.Post("/login", url.Values{"username": {username}, "password": {password}})
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("login as %s: status %d, body %s", username, resp.StatusCode, body)
	}
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// WaitHTTP waits until url answers 200.
func WaitHTTP(t testing.TB, url string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer: %v", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// APIClient calls Herald's JSON API with a bearer key.
type APIClient struct {
	T    testing.TB
	Base string
	Key  string
	// Lang, when set, is sent as Accept-Language.
	Lang string
}

// NewAPIKey creates an API key with the scopes given on h and returns a client that
// sends it.
func NewAPIKey(t testing.TB, h *Running, scopes string) *APIClient {
	t.Helper()
	_, secret, err := h.App.Store.Access().CreateAPIKey(context.Background(), "test-"+strings.ReplaceAll(scopes, ",", "-"), scopes, "test")
	if err != nil {
		t.Fatal(err)
	}
	return &APIClient{T: t, Base: h.URL, Key: secret}
}

// Call sends a raw body and decodes the JSON answer into a generic map (or list).
func (a *APIClient) Call(method, path, body string) (int, map[string]any, http.Header) {
	a.T.Helper()
	req, err := http.NewRequest(method, a.Base+path, strings.NewReader(body))
	if err != nil {
		a.T.Fatal(err)
	}
	if a.Key != "" {
		req.Header.Set("Authorization", "Bearer "+a.Key)
	}
	req.Header.Set("Content-Type", "application/json")
	if a.Lang != "" {
		req.Header.Set("Accept-Language", a.Lang)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	testenv.CheckAPIAnswer(a.T, req, resp.StatusCode, resp.Header, raw)
	out := map[string]any{}
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &out); err != nil {
			a.T.Fatalf("%s %s: answer is not JSON: %s", method, path, raw)
		}
	} else if len(raw) > 0 && raw[0] == '[' {
		var list []any
		_ = json.Unmarshal(raw, &list)
		out["list"] = list
	}
	out["_raw"] = string(raw)
	return resp.StatusCode, out, resp.Header
}

// NeedMySQLAndRedis skips a benchmark or test unless HERALD_TEST_MYSQL_DSN and
// HERALD_TEST_REDIS_URL name the servers it runs on.
func NeedMySQLAndRedis(t testing.TB) {
	t.Helper()
	if os.Getenv("HERALD_TEST_MYSQL_DSN") == "" || os.Getenv("HERALD_TEST_REDIS_URL") == "" {
		t.Skip("set HERALD_TEST_MYSQL_DSN and HERALD_TEST_REDIS_URL (make bench does; .ci/run does for make test)")
	}
}

// EnvInt is the positive whole number in the environment variable name, else def.
func EnvInt(name string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(name), &n); err == nil && n > 0 {
		return n
	}
	return def
}
