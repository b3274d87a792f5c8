package web_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"herald/access"
	"herald/audit"
	"herald/kernel"
	"herald/web"
)

// statuses sends n requests at once and counts the answers by status code.
func statuses(n int, send func() int) map[int]int {
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got = map[int]int{}
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status := send()
			mu.Lock()
			got[status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return got
}

// auditCount counts the audit entries with an action.
func (c *console) auditCount(action string) int {
	c.t.Helper()
	list, err := c.store.AuditLog().List(context.Background(), audit.Filter{Action: action}, 1000)
	if err != nil {
		c.t.Fatal(err)
	}
	return len(list)
}

// An address that guesses wrong too often is refused (429), whoever it tries; a sign-in
// from another address still works.
func TestParallelWrongPasswordsStopAtTheAddressLimit(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(viewerUser)
	const parallel = 30
	var n atomic.Int32
	got := statuses(parallel, func() int {
		// Each guess for another name: the address's limit, not a user's, stops them.
		name := fmt.Sprintf("%s%d", viewerUser, n.Add(1))
		resp, _ := c.login("").post("/login", url.Values{"username": {name}, "password": {"wrong-password"}})
		return resp.StatusCode
	})
	// Every wrong password that reached the check is audited as a failed sign-in: that
	// many bcrypt comparisons ran.
	checked := c.auditCount("user.login_failed")
	if got[http.StatusUnauthorized] != checked || checked < 1 || checked > access.GuessesPerIP ||
		got[http.StatusUnauthorized]+got[http.StatusTooManyRequests] != parallel {
		t.Fatalf("%d parallel wrong passwords: answers %v, %d failed sign-ins audited; want at most %d checked (401), the rest refused (429)",
			parallel, got, checked, access.GuessesPerIP)
	}
	a := c.lastAudit("user.login_failed")
	if !strings.HasPrefix(a.Actor, viewerUser) || a.IP != "127.0.0.1" || !strings.Contains(a.Detail, "401") {
		t.Errorf("failed sign-in audited as %+v, want the username tried, the address and the result", a)
	}
	if a := c.lastAudit("user.login_throttled"); !strings.HasPrefix(a.Actor, viewerUser) || !strings.Contains(a.Detail, "429") {
		t.Errorf("refused sign-in audited as %+v", a)
	}
	if n := c.auditCount("user.login_throttled"); n > 2*(parallel-access.GuessesPerIP) {
		t.Errorf("%d refused sign-ins audited, want one a minute per name", n)
	}
	resp, body := c.login("").post("/login", url.Values{"username": {viewerUser}, "password": {testPassword}})
	wantStatus(t, "the right password after the address's limit", resp, body, http.StatusTooManyRequests)
	wantContains(t, "sign-in page", body, "Too many failed sign-ins from this address")
}

// Past a user's limit, guesses from many addresses (behind a configured proxy) are
// refused at once while the user's gate is closed: 429 with Retry-After and a sentence
// from the catalogs, in either language, the password unchecked. Nobody is locked out:
// once the gate opens, the user's own right password signs in.
func TestWrongGuessesDoNotLockTheUserOut(t *testing.T) {
	t.Parallel()
	c := newConsole(t, func(o *web.Options) { o.TrustedProxies = []string{"127.0.0.1"} })
	c.user(adminUser)
	from := func(ip string) map[string]string { return map[string]string{"X-Forwarded-For": ip} }
	form := func(password string) io.Reader {
		return strings.NewReader(url.Values{"username": {adminUser}, "password": {password}}.Encode())
	}
	const formType = "application/x-www-form-urlencoded"
	for i := range access.GuessesPerUser + 1 {
		resp, body := c.login("").do("POST", "/login", formType, form("wrong-password"), from(fmt.Sprintf("198.51.100.%d", i)))
		wantStatus(t, fmt.Sprintf("wrong guess %d", i+1), resp, body, http.StatusUnauthorized)
	}
	if a := c.lastAudit("user.login_failed"); a.IP != "198.51.100.5" {
		t.Errorf("failed sign-in audited from %q, want the address the configured proxy forwarded", a.IP)
	}
	checked := c.auditCount("user.login_failed")
	got := statuses(30, func() int {
		resp, _ := c.login("").do("POST", "/login", formType, form("wrong-password"), from("198.51.100.77"))
		return resp.StatusCode
	})
	if n := c.auditCount("user.login_failed") - checked; n > 1 || got[http.StatusTooManyRequests] < 29 {
		t.Errorf("30 parallel guesses while the gate is closed: answers %v, %d checked; want at most one checked", got, n)
	}
	for _, lang := range []struct{ accept, want string }{
		{"en", "Too many wrong passwords for this user"}, {"zh-CN", "此用户密码错误次数过多"},
	} {
		// A guess that finds the gate open passes it and closes it for twice as long:
		// within a few guesses one is refused, however slow the machine.
		var resp *http.Response
		var body string
		for range 8 {
			resp, body = c.login("").do("POST", "/login", formType, form("wrong-password"),
				map[string]string{"X-Forwarded-For": "203.0.113.7", "Accept-Language": lang.accept})
			if resp.StatusCode == http.StatusTooManyRequests {
				break
			}
		}
		wantStatus(t, "a guess while the gate is closed ("+lang.accept+")", resp, body, http.StatusTooManyRequests)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
			t.Errorf("Retry-After %q, want the seconds until the gate opens", resp.Header.Get("Retry-After"))
		}
		wantContains(t, "sign-in page ("+lang.accept+")", body, lang.want)
	}
	// The gate opens after its delay: the admin signs in.
	deadline := time.Now().Add(70 * time.Second)
	for {
		resp, body := c.login("").do("POST", "/login", formType, form(testPassword), from("203.0.113.7"))
		if resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			wantRedirect(t, "the admin's own sign-in once the gate opened", resp, body, "/")
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// X-Forwarded-For from a peer that is not a configured proxy is not believed, loopback
// included: a client cannot choose the address its guesses count against.
func TestForwardedForOnlyFromConfiguredProxies(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(viewerUser)
	resp, body := c.login("").do("POST", "/login", "application/x-www-form-urlencoded",
		strings.NewReader(url.Values{"username": {viewerUser}, "password": {"wrong-password"}}.Encode()),
		map[string]string{"X-Forwarded-For": "198.51.100.99"})
	wantStatus(t, "wrong password", resp, body, http.StatusUnauthorized)
	if a := c.lastAudit("user.login_failed"); a.IP != "127.0.0.1" {
		t.Errorf("failed sign-in audited from %q, want the peer's address 127.0.0.1: no proxy is configured", a.IP)
	}
}

func TestCurrentPasswordChecksAreThrottled(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	op := c.as(operatorUser)
	const parallel = 25
	got := statuses(parallel, func() int {
		resp, _ := op.post("/password", url.Values{"current_password": {"wrong-password"}, "new_password": {"staple-battery-horse"}})
		return resp.StatusCode
	})
	// The address's limit counts the sign-in of c.as too.
	if got[http.StatusUnprocessableEntity] != c.auditCount("user.password_change_failed") ||
		got[http.StatusUnprocessableEntity] > access.GuessesPerIP || got[http.StatusTooManyRequests] < parallel-access.GuessesPerIP {
		t.Fatalf("%d wrong current passwords: answers %v, want at most %d checked (422, audited), the rest refused (429)",
			parallel, got, access.GuessesPerIP)
	}
	var resp *http.Response
	var body string
	for range 8 {
		resp, body = op.post("/password", url.Values{"current_password": {"wrong-password"}, "new_password": {"staple-battery-horse"}})
		if resp.StatusCode == http.StatusTooManyRequests {
			break
		}
	}
	wantStatus(t, "a current password while the gate is closed", resp, body, http.StatusTooManyRequests)
	wantFieldError(t, body, "current_password", "too many wrong passwords")
	if resp.Header.Get("Retry-After") == "" {
		t.Error("a refused current password without Retry-After")
	}
	// From another address the user is not locked out: once the gate opens, the right
	// password passes.
	deadline := time.Now().Add(70 * time.Second)
	for {
		_, err := c.store.Access().Authenticate(context.Background(), operatorUser, testPassword, "10.9.9.9")
		if !errors.Is(err, access.ErrThrottled) || time.Now().After(deadline) {
			if err != nil {
				t.Errorf("sign-in from another address after the wrong current passwords: %v", err)
			}
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestWeakPasswordsAreRefusedWithTheReason(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	admin := c.as(adminUser)
	target := c.user(viewerUser)

	resp, body := c.as(operatorUser).post("/password", url.Values{"current_password": {testPassword}, "new_password": {"password123"}})
	wantStatus(t, "common new password", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "new_password", "is too easy to guess. This is a very common password")

	resp, body = admin.post("/users", url.Values{"username": {"newbie"}, "role": {"viewer"}, "password": {"newbie-horse-battery"}})
	wantStatus(t, "password with the username", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "password", "must not contain the username")

	resp, body = admin.post(fmt.Sprintf("/users/%d/password", target.ID), url.Values{"password": {"qwertyuiop12"}})
	wantStatus(t, "reset to a keyboard row", resp, body, http.StatusUnprocessableEntity)
	wantContains(t, "user list", body, "New password for vera: password is too easy to guess. This is similar to a commonly used password")
}

func TestSessionsPage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	u := c.user(operatorUser)
	here, there := c.login(operatorUser), c.login(operatorUser)

	resp, body := here.get("/password")
	wantStatus(t, "GET /password", resp, body, http.StatusOK)
	if strings.Count(body, `data-session="current"`) != 1 || strings.Count(body, `data-session="other"`) != 1 {
		t.Fatalf("the sessions list should show this session and the other one:\n%s", body)
	}
	wantContains(t, "sessions list", body, "Go-http-client", "127.0.0.1", "this session", `action="/sessions/revoke"`)
	// The user's own page chooses the console's language: follow the browser, 中文, English.
	wantContains(t, "language choice", body, `action="/language"`, `<input type="hidden" name="next" value="/password">`,
		`<option value="" selected>`, `<option value="zh-CN" lang="zh-CN">中文</option>`)
	resp, body = here.post("/language", url.Values{"language": {"zh-CN"}, "next": {"/password"}})
	if loc := wantRedirect(t, "choose Chinese", resp, body, "/password"); loc != "/password" {
		t.Errorf("after choosing a language: redirect to %q, want /password", loc)
	}
	_, body = here.get("/password")
	wantContains(t, "the page in Chinese", body, `<html lang="zh-CN">`, `<option value="zh-CN" selected lang="zh-CN">中文</option>`, "我的会话")
	resp, body = here.post("/password", url.Values{"current_password": {testPassword}, "new_password": {"password123"}})
	wantStatus(t, "weak new password, in Chinese", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "new_password", "太容易被猜到。这是一个非常常用的密码。")
	resp, body = here.post("/language", url.Values{"language": {""}, "next": {"/password"}})
	wantRedirect(t, "follow the browser again", resp, body, "/password")

	t.Run("an idle session ends", func(t *testing.T) {
		idle := c.login(operatorUser)
		// The session the client holds is the newest one of the user.
		list, err := c.store.Access().UserSessions(ctx, u.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		newest := list[0]
		for _, s := range list {
			if s.CreatedAt.After(newest.CreatedAt) {
				newest = s
			}
		}
		if _, err := c.store.SQL().Exec("UPDATE console_sessions SET last_seen_at = ? WHERE id = ?", kernel.Now().Add(-31*time.Minute), newest.ID); err != nil {
			t.Fatal(err)
		}
		resp, _ := idle.get("/")
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/login") {
			t.Errorf("a session unused for 31 minutes: %d to %q, want 303 to /login", resp.StatusCode, loc)
		}
		if resp, _ := here.get("/"); resp.StatusCode != http.StatusOK {
			t.Errorf("a session in use: %d, want 200", resp.StatusCode)
		}
	})

	t.Run("sign out everywhere", func(t *testing.T) {
		resp, body := c.login("").post("/sessions/revoke", nil)
		wantRedirect(t, "anonymous sign out everywhere", resp, body, "/login?next=")
		resp, body = here.post("/sessions/revoke", nil)
		wantRedirect(t, "sign out everywhere", resp, body, "/login")
		for name, cl := range map[string]*client{"this browser": here, "the other browser": there} {
			if resp, _ := cl.get("/"); resp.StatusCode != http.StatusSeeOther {
				t.Errorf("%s after signing out everywhere: %d, want 303 to /login", name, resp.StatusCode)
			}
		}
		if n, _ := c.store.Access().SessionCount(ctx, u.ID); n != 0 {
			t.Errorf("%d sessions left", n)
		}
		if a := c.lastAudit("user.logout_everywhere"); a.Actor != operatorUser {
			t.Errorf("audit %+v", a)
		}
	})
}

// TestSignInReturnsToThePageAsked: an anonymous visit to a page goes to the sign-in
// form, which carries the page along (through a failed attempt too) and goes there once
// signed in; a next that leaves the console goes to the dashboard instead.
func TestSignInReturnsToThePageAsked(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(viewerUser)
	anon := c.login("")
	resp, body := anon.get("/messages?status=sent")
	login := wantRedirect(t, "anonymous page", resp, body, "/login?next=")
	_, form := anon.get(login)
	wantContains(t, "sign-in form", form, `name="next" value="/messages?status=sent"`)
	resp, form = anon.post("/login", url.Values{"username": {viewerUser}, "password": {"wrong-password"}, "next": {"/messages?status=sent"}})
	wantStatus(t, "wrong password", resp, form, http.StatusUnauthorized)
	wantContains(t, "sign-in form after a wrong password", form, `name="next" value="/messages?status=sent"`)
	resp, body = anon.post("/login", url.Values{"username": {viewerUser}, "password": {testPassword}, "next": {"/messages?status=sent"}})
	if got := wantRedirect(t, "sign in", resp, body, "/"); got != "/messages?status=sent" {
		t.Errorf("signed in to %q, want the page asked for", got)
	}
	other := c.login("")
	resp, body = other.post("/login", url.Values{"username": {viewerUser}, "password": {testPassword}, "next": {"//evil.example/"}})
	if got := wantRedirect(t, "sign in with an off-site next", resp, body, "/"); got != "/" {
		t.Errorf("signed in to %q, want /", got)
	}
}

func TestAccessControl(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(viewerUser)
	formBody := func(form url.Values) io.Reader { return strings.NewReader(form.Encode()) }
	const formType = "application/x-www-form-urlencoded"

	t.Run("anonymous page redirects to login", func(t *testing.T) {
		resp, _ := c.login("").get("/")
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
			t.Errorf("GET / anonymously: %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
		}
	})
	t.Run("anonymous htmx partial is told to log in", func(t *testing.T) {
		resp, _ := c.login("").getHX("/batches/x/progress")
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("HX-Redirect"), "/login") {
			t.Errorf("htmx partial anonymously: %d, HX-Redirect %q", resp.StatusCode, resp.Header.Get("HX-Redirect"))
		}
	})
	t.Run("cross-origin post is refused", func(t *testing.T) {
		b := c.login(adminUser)
		crossSite := map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
		resp, _ := b.do("POST", "/compose", formType, formBody(url.Values{"text": {"x"}}), crossSite)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-origin POST: %d, want 403", resp.StatusCode)
		}
		resp, _ = b.do("POST", "/login", formType, formBody(url.Values{"username": {adminUser}, "password": {testPassword}}), crossSite)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-origin login: %d, want 403", resp.StatusCode)
		}
	})
	t.Run("viewer cannot compose", func(t *testing.T) {
		b := c.login(viewerUser)
		if resp, _ := b.get("/"); resp.StatusCode != http.StatusOK {
			t.Errorf("viewer GET /: %d, want 200", resp.StatusCode)
		}
		if resp, _ := b.get("/compose"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("viewer GET /compose: %d, want 403", resp.StatusCode)
		}
		if resp, _ := b.post("/compose", url.Values{"text": {"x"}}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("viewer POST /compose: %d, want 403", resp.StatusCode)
		}
	})
	t.Run("past five wrong passwords a minute guesses pass one at a time, and no one is locked out", func(t *testing.T) {
		b := c.login("")
		for i := 1; i <= 6; i++ {
			resp, _ := b.post("/login", url.Values{"username": {viewerUser}, "password": {"wrong-password"}})
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("wrong password %d: %d, want 401", i, resp.StatusCode)
			}
		}
		// The sixth wrong guess closed the viewer's gate: the next guess, right or not, is
		// refused at once without a check.
		resp, _ := b.post("/login", url.Values{"username": {viewerUser}, "password": {testPassword}})
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("a guess while the gate is closed: %d, want 429", resp.StatusCode)
		}
		wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || wait < 1 {
			t.Fatalf("Retry-After %q, want whole seconds", resp.Header.Get("Retry-After"))
		}
		// Another user from elsewhere is not locked out by the viewer's failures.
		c.login(adminUser)
		// Once the gate opens the right password signs in: a delay, not a lock.
		time.Sleep(time.Duration(wait) * time.Second)
		resp, _ = b.post("/login", url.Values{"username": {viewerUser}, "password": {testPassword}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("right password once the gate opened: %d, want 303", resp.StatusCode)
		}
	})
	t.Run("logout revokes the session server-side", func(t *testing.T) {
		b := c.login(adminUser)
		u, _ := url.Parse(c.url)
		saved := b.c.Jar.Cookies(u)
		if resp, _ := b.post("/logout", url.Values{}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout: %d", resp.StatusCode)
		}
		// Replaying the old cookie must not work.
		replay := c.login("")
		replay.c.Jar.SetCookies(u, saved)
		if resp, _ := replay.get("/"); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("old cookie after logout: %d, want 303 to /login", resp.StatusCode)
		}
	})
}

func TestPasswordChangeRevokesOtherSessions(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	first, second := c.login(adminUser), c.login(adminUser)

	resp, body := first.post("/password", url.Values{"current_password": {"wrong"}, "new_password": {"a-new-password-1"}})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `id="error-current_password"`) {
		t.Fatalf("wrong current password: %d, want 422 with the error beside current_password", resp.StatusCode)
	}
	resp, _ = first.post("/password", url.Values{"current_password": {testPassword}, "new_password": {"a-new-password-1"}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("change password: %d", resp.StatusCode)
	}
	if resp, _ := first.get("/"); resp.StatusCode != http.StatusOK {
		t.Errorf("the browser that changed the password: %d, want 200 (a fresh session)", resp.StatusCode)
	}
	if resp, _ := second.get("/"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("another session after the change: %d, want 303 to /login", resp.StatusCode)
	}
	resp, body = c.login("").post("/login", url.Values{"username": {adminUser}, "password": {"a-new-password-1"}})
	wantStatus(t, "sign in with the new password", resp, body, http.StatusSeeOther)
}
