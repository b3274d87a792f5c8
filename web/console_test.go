package web_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"herald/access"
	"herald/alert"
	"herald/audit"
	"herald/channels"
	sandboxsender "herald/channels/sandbox"
	"herald/delivery"
	"herald/directory"
	"herald/dispatch"
	"herald/handlers"
	"herald/i18n"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
	"herald/sending"
	"herald/simulator"
	"herald/tasks"
	"herald/web"
)

// TestMain makes password hashing cheap: the tests sign in hundreds of times (models'
// own tests check the real cost). The browser tests share one Chromium, closed at the end.
func TestMain(m *testing.M) {
	access.UseCheapPasswordHashes()
	code := m.Run()
	testenv.CloseChrome()
	os.Exit(code)
}

// Console users every test signs in as, one per role.
const (
	adminUser, operatorUser, viewerUser = "ada", "otto", "vera"
	testPassword                        = "console-test-password"
)

// console is a Herald console on a real database and Redis, seeded with the demo data
// (a sandbox account, seven staff, a duty week, the task-overdue template) and one user
// of each role. Nothing delivers: the messages it creates stay pending.
type console struct {
	t     *testing.T
	url   string
	store *models.Store
	h     *handlers.Handlers
	// limiter is the console's rate limiter, for tests that use up an account's limits.
	limiter *tasks.Limiter
	// sandbox is the simulator behind the sandbox platform.
	sandbox *simulator.Simulator
	engine  *gin.Engine
	loc     *time.Location
	users   map[string]*access.User
	logs    *testenv.SyncBuffer
	// accounts is the dispatcher's account cache, for tests that change an account
	// behind it.
	accounts *sending.AccountCache
	// ackLinks signs the acknowledgment links of the console's alerts.
	ackLinks *alert.AckLinks
	// clockOffset moves the dispatcher's clock on (nanoseconds), for tests of expiry.
	clockOffset atomic.Int64
	// gate, when set, holds the requests to one path until it opens (see hold).
	gate atomic.Pointer[routeGate]

	mu      sync.Mutex
	clients map[string]*client
}

// newConsole starts a console; adjust functions change its web options first.
func newConsole(t *testing.T, adjust ...func(*web.Options)) *console {
	t.Helper()
	ctx := context.Background()
	store := testenv.Store(t)
	redisURL := testenv.RedisURL(t)
	red, err := tasks.ParseRedisURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	redOpt := red.Asynq()
	rdb := red.NewClient(0)
	enq := tasks.NewEnqueuer(redOpt)
	inspector := asynq.NewInspector(redOpt)
	logs := &testenv.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	stats := store.NewStats()
	sandbox := simulator.New(simulator.Faults{})
	registry := channels.NewRegistry(sandboxsender.New(sandbox))
	// The server's address comes first: the acknowledgment links name it.
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String()
	c := &console{t: t, url: url, store: store, sandbox: sandbox, loc: loc, logs: logs,
		users: map[string]*access.User{}, clients: map[string]*client{},
		accounts: store.Sending().NewAccountCache(5 * time.Second),
		ackLinks: alert.NewAckLinks(url, []byte("ack-test-secret-key-0123456789abcdef"), nil)}
	d, err := dispatch.NewDispatcher(dispatch.Config{Store: store, Enqueuer: enq, Log: log, Location: loc, Stats: stats,
		Accounts: c.accounts, Channels: registry, AckLinks: c.ackLinks,
		Now: func() time.Time { return kernel.Now().Add(time.Duration(c.clockOffset.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	limiter, err := tasks.NewLimiter(tasks.LimiterConfig{Redis: red, Client: rdb})
	if err != nil {
		t.Fatal(err)
	}
	h := &handlers.Handlers{Store: store, Log: log, Stats: stats, Dispatch: d,
		PingRedis:   func(context.Context) error { return enq.Ping() },
		Limiter:     limiter,
		QueueDepths: func() []delivery.QueueDepth { return tasks.MessageQueueDepths(inspector, enq) },
		Channels:    registry,
		Location:    loc,
		PublicURL:   "https://herald.example",
	}
	sessions := web.NewSessions([]byte("console-test-session-secret-0123456789"), store, 30*time.Minute)
	h.Sessions = sessions
	// The console's tests read its English pages, as the root tests do
	// (HERALD_DEFAULT_LANGUAGE=en); the Chinese ones have tests of their own.
	opts := web.Options{Location: loc, Log: log, Redis: redOpt, Metrics: web.NewMetrics(prometheus.NewRegistry(), inspector, enq, store, log),
		DefaultLanguage: i18n.English}
	for _, f := range adjust {
		f(&opts)
	}
	handler, closeHandler := web.NewHandler(h, sessions, opts)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g := c.gate.Load(); g != nil && r.URL.Path == g.path {
			<-g.open
		}
		handler.ServeHTTP(w, r)
	})
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		closeHandler()
		inspector.Close()
		enq.Close()
		rdb.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	if err := store.SeedDemo(ctx); err != nil {
		t.Fatal(err)
	}
	c.h, c.limiter, c.engine = h, limiter, handler.(*gin.Engine)
	return c
}

// client is a browser: it keeps cookies and does not follow redirects.
type client struct {
	t    *testing.T
	base string
	c    *http.Client
}

// userRoles are the console's test users; each is created when a test first needs it.
var userRoles = map[string]access.Role{adminUser: access.RoleAdmin, operatorUser: access.RoleOperator, viewerUser: access.RoleViewer}

// user returns a test user, creating it on first use: password hashing is deliberately
// slow (and slower under -race), so tests create only the users they sign in as.
func (c *console) user(name string) *access.User {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if u, ok := c.users[name]; ok {
		return u
	}
	u, err := c.store.Access().CreateUser(context.Background(), name, testPassword, userRoles[name])
	if err != nil {
		c.t.Fatal(err)
	}
	c.users[name] = u
	return u
}

// routeGate holds the requests to path until open is closed.
type routeGate struct {
	path string
	open chan struct{}
}

// hold makes every request to path wait, however long, until release is called (at the
// latest when the test ends): a slow route whose end the test chooses, not the clock.
func (c *console) hold(path string) (release func()) {
	c.t.Helper()
	g := &routeGate{path: path, open: make(chan struct{})}
	c.gate.Store(g)
	release = sync.OnceFunc(func() {
		c.gate.CompareAndSwap(g, nil)
		close(g.open)
	})
	c.t.Cleanup(release)
	return release
}

// as returns a client signed in as username ("" for an anonymous one), signing in once
// per console: each sign-in costs a bcrypt comparison.
func (c *console) as(username string) *client {
	c.t.Helper()
	c.mu.Lock()
	cl, ok := c.clients[username]
	c.mu.Unlock()
	if ok {
		return cl
	}
	cl = c.login(username)
	c.mu.Lock()
	c.clients[username] = cl
	c.mu.Unlock()
	return cl
}

// login returns a client with a session of its own, signed in as username ("" for an
// anonymous one).
func (c *console) login(username string) *client {
	c.t.Helper()
	jar, _ := cookiejar.New(nil)
	cl := &client{t: c.t, base: c.url, c: &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if username != "" {
		c.user(username)
		resp, body := cl.post("/login", url.Values{"username": {username}, "password": {testPassword}})
		if resp.StatusCode != http.StatusSeeOther {
			c.t.Fatalf("login as %s: %d\n%s", username, resp.StatusCode, body)
		}
	}
	return cl
}

func (cl *client) do(method, path, contentType string, body io.Reader, header map[string]string) (*http.Response, string) {
	cl.t.Helper()
	req, err := http.NewRequest(method, cl.base+path, body)
	if err != nil {
		cl.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := cl.c.Do(req)
	if err != nil {
		cl.t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	testenv.CheckAPIAnswer(cl.t, req, resp.StatusCode, resp.Header, text)
	return resp, string(text)
}

func (cl *client) get(path string) (*http.Response, string) {
	cl.t.Helper()
	return cl.do("GET", path, "", nil, nil)
}

// getHX is a GET as htmx makes it.
func (cl *client) getHX(path string) (*http.Response, string) {
	cl.t.Helper()
	return cl.do("GET", path, "", nil, map[string]string{"HX-Request": "true"})
}

func (cl *client) post(path string, form url.Values) (*http.Response, string) {
	cl.t.Helper()
	return cl.do("POST", path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), nil)
}

// postHX is a form POST as htmx makes it.
func (cl *client) postHX(path string, form url.Values) (*http.Response, string) {
	cl.t.Helper()
	return cl.do("POST", path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), map[string]string{"HX-Request": "true"})
}

// upload posts a multipart form, with a file field "file" when fileContent is not empty.
func (cl *client) upload(path string, fields url.Values, fileContent string) (*http.Response, string) {
	cl.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, list := range fields {
		for _, v := range list {
			_ = w.WriteField(k, v)
		}
	}
	if fileContent != "" {
		fw, err := w.CreateFormFile("file", "import.csv")
		if err != nil {
			cl.t.Fatal(err)
		}
		_, _ = io.WriteString(fw, fileContent)
	}
	w.Close()
	return cl.do("POST", path, w.FormDataContentType(), &buf, nil)
}

// wantStatus fails the test unless resp has the status.
func wantStatus(t *testing.T, what string, resp *http.Response, body string, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("%s: status %d, want %d\n%s", what, resp.StatusCode, status, body)
	}
}

// wantRedirect fails the test unless resp redirects (303) to a location starting with prefix.
func wantRedirect(t *testing.T, what string, resp *http.Response, body, prefix string) string {
	t.Helper()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, prefix) {
		t.Fatalf("%s: status %d to %q, want 303 to %s…\n%s", what, resp.StatusCode, loc, prefix, body)
	}
	return loc
}

// wantContains fails the test for every string body lacks.
func wantContains(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	missing := false
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s does not contain %q", what, w)
			missing = true
		}
	}
	if missing {
		t.Logf("%s:\n%s", what, body)
		t.FailNow()
	}
}

// wantNotContains fails the test for every string body has.
func wantNotContains(t *testing.T, what, body string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(body, w) {
			t.Errorf("%s contains %q", what, w)
		}
	}
}

// fieldError returns the message rendered beside a form field, or "".
func fieldError(body, field string) string {
	m := regexp.MustCompile(`id="error-` + regexp.QuoteMeta(field) + `">([^<]*)<`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// wantFieldError fails the test unless the form shows the message beside the field.
func wantFieldError(t *testing.T, body, field, message string) {
	t.Helper()
	got := fieldError(body, field)
	if !strings.Contains(got, message) {
		t.Fatalf("error beside %s = %q, want %q\n%s", field, got, message, body)
	}
}

// recipient returns a seeded recipient.
func (c *console) recipient(externalID string) *directory.Recipient {
	c.t.Helper()
	r, err := c.store.Directory().RecipientByExternalID(context.Background(), externalID)
	if err != nil {
		c.t.Fatal(err)
	}
	return r
}

// lastAudit returns the newest audit entry with the action, failing if there is none.
func (c *console) lastAudit(action string) audit.Entry {
	c.t.Helper()
	list, err := c.store.AuditLog().List(context.Background(), audit.Filter{Action: action}, 1)
	if err != nil {
		c.t.Fatal(err)
	}
	if len(list) == 0 {
		c.t.Fatalf("no audit entry %s", action)
	}
	return list[0]
}

// today is the current date in the console's time zone, shifted by days.
func (c *console) today(days int) string {
	now := time.Now().In(c.loc)
	return time.Date(now.Year(), now.Month(), now.Day()+days, 12, 0, 0, 0, c.loc).Format(time.DateOnly)
}
