package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"herald/access"
	"herald/audit"
	"herald/config"
	"herald/internal/app"
	"herald/models"
)

// runHerald runs the herald binary with args, the environment env only and stdin, and
// returns its exit code and output. A command still running after 30 s is killed.
func runHerald(t *testing.T, env map[string]string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, heraldBinary(t), args...)
	cmd.Env = processEnv(env)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("herald %v: %v", args, err)
		}
		code = exit.ExitCode()
	}
	return code, out.String(), errOut.String()
}

func TestBadConfigurationStopsWithOneLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, variable, value string
	}{
		{"unparsable dsn", "HERALD_MYSQL_DSN", "this is not a dsn"},
		{"unknown time zone", "HERALD_TIMEZONE", "Mars/Olympus_Mons"},
		{"negative concurrency", "HERALD_WORKER_CONCURRENCY", "-4"},
		{"bad redis url", "HERALD_REDIS_URL", "http://localhost"},
		{"session idle not a duration", "HERALD_SESSION_IDLE", "30"},
		{"unknown console language", "HERALD_DEFAULT_LANGUAGE", "fr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"HERALD_DATA_DIR": t.TempDir(), tt.variable: tt.value}
			code, _, stderr := runHerald(t, env, "", "serve")
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.variable) {
				t.Errorf("stderr %q: want one line naming %s", stderr, tt.variable)
			}
		})
	}
}

// TestUnreachableServersStopWithTheCause: a process whose database or Redis does not
// answer at start exits with a last line naming the setting, the server and the cause.
func TestUnreachableServersStopWithTheCause(t *testing.T) {
	t.Parallel()
	closed := freeAddr(t) // nothing listens there
	tests := []struct{ name, variable, value, want string }{
		{"mysql", "HERALD_MYSQL_DSN", "root@tcp(" + closed + ")/herald?parseTime=true", "cannot open the database at " + closed + "/herald (HERALD_MYSQL_DSN)"},
		{"redis", "HERALD_REDIS_URL", "redis://" + closed + "/0", "cannot reach Redis at " + closed + " (HERALD_REDIS_URL)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t)
			env[tt.variable] = tt.value
			env["HERALD_ADDR"] = freeAddr(t)
			// Production mode needs its secrets whatever backends the test run has.
			env["HERALD_SESSION_SECRET"] = "test-session-secret-0123456789abcdef"
			env["HERALD_SECRET_KEY"] = "test-secret-key-0123456789abcdef0123"
			code, _, stderr := runHerald(t, env, "", "serve")
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			if code != 1 || !strings.Contains(last, tt.want) || !strings.Contains(last, "connection refused") {
				t.Errorf("exit %d, last line %q: want 1 and a line with %q and the cause", code, last, tt.want)
			}
		})
	}
}

func TestWeakFirstAdminPasswordStopsWithTheReason(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	env["HERALD_ADMIN_PASSWORD"] = "password123"
	env["HERALD_ADDR"] = freeAddr(t)
	// Were the password accepted, Herald would serve until runHerald's limit.
	code, _, stderr := runHerald(t, env, "", "serve")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := lines[len(lines)-1]; code != 1 || !strings.Contains(last, "HERALD_ADMIN_PASSWORD: is too easy to guess. This is a very common password") {
		t.Errorf("exit %d, stderr %q: want 1 and a last line naming HERALD_ADMIN_PASSWORD and why it was refused", code, stderr)
	}
}

func TestMigrateStatusListsEveryMigrationApplied(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	if code, out, stderr := runHerald(t, env, "", "migrate", "status"); code != 0 || !strings.Contains(out, "pending") {
		t.Fatalf("status before up: code %d, out %q, err %q; want a pending migration", code, out, stderr)
	}
	if code, out, stderr := runHerald(t, env, "", "migrate", "up"); code != 0 || !strings.Contains(out, "applied") {
		t.Fatalf("migrate up: code %d, out %q, err %q", code, out, stderr)
	}
	code, out, stderr := runHerald(t, env, "", "migrate", "status")
	if code != 0 {
		t.Fatalf("migrate status: code %d, err %q", code, stderr)
	}
	rows := regexp.MustCompile(`(?m)^(\d+)\s+(\S+)\s+(.+)$`).FindAllStringSubmatch(out, -1)
	if len(rows) == 0 {
		t.Fatalf("migrate status lists no migration:\n%s", out)
	}
	for _, r := range rows {
		if r[3] == "pending" || !strings.Contains(r[3], "UTC") {
			t.Errorf("migration %s %s: %q, want an applied time", r[1], r[2], r[3])
		}
	}
	if code, _, _ := runHerald(t, env, "", "migrate", "sideways"); code != 1 {
		t.Errorf("migrate sideways: exit %d, want 1", code)
	}
}

func TestAdminCreateReadsPasswordFromStdin(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	code, out, stderr := runHerald(t, env, "night-shift-ledger\n", "admin", "create", "--username", "ops", "--role", "operator")
	if code != 0 || !strings.Contains(out, "created operator user ops") {
		t.Fatalf("admin create: code %d, out %q, err %q", code, out, stderr)
	}
	code, _, stderr = runHerald(t, env, "short\n", "admin", "create", "--username", "ops2", "--role", "operator")
	if code != 1 || !strings.Contains(stderr, "password") {
		t.Errorf("short password: code %d, err %q; want 1 naming the password", code, stderr)
	}
	code, _, stderr = runHerald(t, env, "qwertyuiop12\n", "admin", "create", "--username", "ops2", "--role", "operator")
	if code != 1 || !strings.Contains(stderr, "password: is too easy to guess. This is similar to a commonly used password") {
		t.Errorf("weak password: code %d, err %q; want 1 saying why", code, stderr)
	}
	code, _, stderr = runHerald(t, env, "night-shift-ledger\n", "admin", "create", "--username", "ops", "--role", "viewer")
	if code != 1 || !strings.Contains(stderr, "taken") {
		t.Errorf("duplicate username: code %d, err %q", code, stderr)
	}

	h := startHerald(t, env)
	u, err := h.App.Store.Access().Authenticate(context.Background(), "ops", "night-shift-ledger", "127.0.0.1")
	if err != nil || u.Role != access.RoleOperator {
		t.Fatalf("authenticate the created user: %v, %+v", err, u)
	}
	// A user exists, so no first admin was generated.
	if strings.Contains(h.Stdout.String(), "Created the first console user") {
		t.Errorf("first admin created although a user existed:\n%s", h.Stdout.String())
	}
}

func TestFirstAdminPasswordIsGeneratedAndPrintedOnce(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	delete(env, "HERALD_ADMIN_PASSWORD")
	h := startHerald(t, env)
	m := regexp.MustCompile(`password: (\S+)`).FindStringSubmatch(h.Stdout.String())
	if m == nil {
		t.Fatalf("no generated password printed:\n%s", h.Stdout.String())
	}
	newBrowser(t, h.URL).Login("admin", m[1])
	h.Stop()

	again := startHerald(t, env)
	if strings.Contains(again.Stdout.String(), "password") {
		t.Errorf("second start printed a password again:\n%s", again.Stdout.String())
	}
}

// TestRestartKeepsData checks that the install is persistent: users, staff and messages
// survive a restart (the in-process Redis does not, and need not).
func TestRestartKeepsData(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	h := startHerald(t, env)
	b := newBrowser(t, h.URL)
	b.Login("admin", testAdminPassword)
	batchID := composeAndWait(t, b, []string{"E2002", "E2003"})
	staff, err := h.App.Store.Directory().CountRecipients(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h.Stop()

	again := startHerald(t, env)
	b = newBrowser(t, again.URL)
	b.Login("admin", testAdminPassword)
	resp, page := b.Get("/batches/" + batchID)
	if resp.StatusCode != 200 || strings.Count(page, `data-status="sent"`) != 2 {
		t.Errorf("batch %s after restart: status %d, sent rows %d; want both still sent", batchID, resp.StatusCode, strings.Count(page, `data-status="sent"`))
	}
	n, err := again.App.Store.Directory().CountRecipients(context.Background())
	if err != nil || n != staff {
		t.Errorf("staff after restart: %d (%v), want %d (demo must not be seeded twice)", n, err, staff)
	}
	composeAndWait(t, b, []string{"E2001"})
}

func TestAPIKeyCreatePrintsTheKeyOnce(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	code, out, stderr := runHerald(t, env, "", "apikey", "create", "--name", "erp", "--scopes", "send,read")
	if code != 0 {
		t.Fatalf("apikey create: %d %s", code, stderr)
	}
	secret := strings.TrimSpace(out)
	if !strings.HasPrefix(secret, "hk_") || !strings.Contains(stderr, "shown only once") {
		t.Fatalf("apikey create printed %q / %q", out, stderr)
	}
	h := startHerald(t, env)
	k, err := h.App.Store.Access().AuthenticateAPIKey(context.Background(), secret)
	if err != nil || k.Name != "erp" || !k.HasScope("send") || k.HasScope("admin") {
		t.Fatalf("the printed key: %+v %v", k, err)
	}
	var stored string
	if err := h.App.Store.SQL().QueryRow("SELECT key_hash FROM api_keys WHERE name = 'erp'").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored == secret || strings.Contains(stored, secret[3:]) {
		t.Errorf("the key is stored in the clear")
	}
	if code, _, stderr := runHerald(t, env, "", "apikey", "create", "--name", "x", "--scopes", "root"); code != 1 || !strings.Contains(stderr, "scopes") {
		t.Errorf("unknown scope: %d %q", code, stderr)
	}

	// With a callback: the key on the first line, the signing secret on the second.
	code, out, stderr = runHerald(t, env, "", "apikey", "create", "--name", "crm", "--scopes", "send,read",
		"--callback-url", "https://crm.example/herald/events")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "hk_") || !strings.HasPrefix(lines[1], "callback secret: hcs_") {
		t.Fatalf("apikey create with a callback: %d %q %q", code, out, stderr)
	}
	k, err = h.App.Store.Access().AuthenticateAPIKey(context.Background(), lines[0])
	if err != nil || k.CallbackURL != "https://crm.example/herald/events" {
		t.Fatalf("the key with a callback: %+v %v", k, err)
	}
	target, err := h.App.Store.Access().CallbackTargetOf(context.Background(), k.ID)
	if err != nil || "callback secret: "+target.Secret != lines[1] {
		t.Errorf("the stored secret does not open to the printed one: %+v %v", target, err)
	}
	// The address guard: a loopback URL needs --callback-allow-private.
	if code, _, stderr := runHerald(t, env, "", "apikey", "create", "--name", "y", "--callback-url", "http://127.0.0.1:9/x"); code != 1 || !strings.Contains(stderr, "callback-url") {
		t.Errorf("loopback callback: %d %q", code, stderr)
	}
	if code, _, stderr := runHerald(t, env, "", "apikey", "create", "--name", "y", "--callback-url", "http://127.0.0.1:9/x", "--callback-allow-private"); code != 0 {
		t.Errorf("loopback callback allowed: %d %q", code, stderr)
	}
}

// openTestStore opens the database of env the way a command does, closed at the end of
// the test.
func openTestStore(t *testing.T, env map[string]string) *models.Store {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	store, err := app.OpenStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

func TestAdminResetPasswordSetsThePasswordAndSignsOut(t *testing.T) {
	t.Parallel()
	const oldPassword, newPassword = "night-shift-ledger", "amber-quarry-lantern-81"
	env := testEnv(t)
	if code, out, stderr := runHerald(t, env, oldPassword+"\n", "admin", "create", "--username", "ops", "--role", "admin"); code != 0 {
		t.Fatalf("admin create: code %d, out %q, err %q", code, out, stderr)
	}
	ctx := context.Background()
	store := openTestStore(t, env)
	u, err := store.Access().UserByUsername(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Access().CreateSession(ctx, u.ID, "127.0.0.1", "test", time.Hour); err != nil {
		t.Fatal(err)
	}

	code, out, stderr := runHerald(t, env, newPassword+"\n", "admin", "reset-password", "--username", "OPS")
	if code != 0 || !strings.Contains(out, "user ops") || !strings.Contains(out, "signed out") {
		t.Fatalf("reset-password: code %d, out %q, err %q", code, out, stderr)
	}
	if _, err := store.Access().Authenticate(ctx, "ops", newPassword, "127.0.0.1"); err != nil {
		t.Errorf("sign-in with the new password: %v", err)
	}
	if _, err := store.Access().Authenticate(ctx, "ops", oldPassword, "127.0.0.1"); !errors.Is(err, access.ErrBadCredentials) {
		t.Errorf("sign-in with the old password: %v, want %v", err, access.ErrBadCredentials)
	}
	if n, err := store.Access().SessionCount(ctx, u.ID); err != nil || n != 0 {
		t.Errorf("sessions after the reset: %d (%v), want 0", n, err)
	}
	entries, err := store.AuditLog().List(ctx, audit.Filter{Action: "user.password_reset"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Actor != "cli" || entries[0].ActorType != "system" || entries[0].TargetID != "ops" {
		t.Fatalf("audit entries user.password_reset: %+v, want one by cli for ops", entries)
	}

	// Refusals: one line naming the rule or the problem, and nothing changes.
	refusals := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"weak password", "qwertyuiop12\n", []string{"--username", "ops"}, "password: is too easy to guess. This is similar to a commonly used password"},
		{"short password", "short\n", []string{"--username", "ops"}, "password: must be at least 10 characters"},
		{"password with the username", "ops-amber-quarry-lantern\n", []string{"--username", "ops"}, "password: must not contain the username"},
		{"unknown user", newPassword + "\n", []string{"--username", "ghost"}, `admin reset-password: no console user is named "ghost"`},
		{"no username", newPassword + "\n", nil, "admin reset-password: --username is required"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := runHerald(t, env, tt.stdin, append([]string{"admin", "reset-password"}, tt.args...)...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("code %d, stdout %q, stderr %q; want 1 and one line with %q", code, out, stderr, tt.want)
			}
		})
	}
	if _, err := store.Access().Authenticate(ctx, "ops", newPassword, "127.0.0.1"); err != nil {
		t.Errorf("the password changed on a refused reset: %v", err)
	}
	if entries, err := store.AuditLog().List(ctx, audit.Filter{Action: "user.password_reset"}, 10); err != nil || len(entries) != 1 {
		t.Errorf("audit entries after refused resets: %d (%v), want still 1", len(entries), err)
	}
}

// TestHelpListsEveryCommand: help, -h and --help print one line for every command and
// subcommand, and exit 0; an unknown command prints the same list to stderr.
func TestHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	commands := []string{"serve", "migrate up|status", "admin create", "admin reset-password", "apikey create", "simulate", "help"}
	for _, arg := range []string{"help", "-h", "--help"} {
		t.Run(arg, func(t *testing.T) {
			code, out, stderr := runHerald(t, map[string]string{}, "", arg)
			if code != 0 || stderr != "" {
				t.Fatalf("herald %s: code %d, stderr %q; want 0 and nothing on stderr", arg, code, stderr)
			}
			for _, c := range commands {
				n := len(regexp.MustCompile(`(?m)^  `+regexp.QuoteMeta(c)+`\b.*\S\s{2,}\S`).FindAllString(out, -1))
				if n != 1 {
					t.Errorf("herald %s lists %q on %d lines with a description, want 1:\n%s", arg, c, n, out)
				}
			}
		})
	}
	code, _, stderr := runHerald(t, map[string]string{}, "", "frobnicate")
	if code != 2 || !strings.Contains(stderr, `unknown command "frobnicate"`) || !strings.Contains(stderr, "admin reset-password") {
		t.Errorf("unknown command: code %d, stderr %q; want 2 and the list of commands", code, stderr)
	}
	code, _, stderr = runHerald(t, map[string]string{}, "", "admin", "promote")
	if code != 1 || !strings.Contains(stderr, "admin create") || !strings.Contains(stderr, "admin reset-password") {
		t.Errorf("unknown admin subcommand: code %d, stderr %q; want 1 and both admin subcommands", code, stderr)
	}
}
