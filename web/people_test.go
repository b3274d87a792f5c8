package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"herald/access"
	"herald/internal/testenv"
)

const initialPassword = "an-initial-password-42"

// signInAs is a client signed in as username with password.
func (c *console) signInAs(username, password string) *client {
	c.t.Helper()
	cl := c.login("")
	resp, body := cl.post("/login", url.Values{"username": {username}, "password": {password}})
	wantRedirect(c.t, "sign in as "+username, resp, body, "/")
	return cl
}

// A user an admin created must choose their own password before any other console
// page; htmx requests are told so too; their API key is not affected. Once changed,
// the console is theirs. A password an admin resets must be changed again; a user made
// on the command line (the store, as the tests' users are) is not asked.
func TestInitialPasswordMustBeChanged(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	admin := c.as(adminUser)
	resp, body := admin.post("/users", url.Values{"username": {"zhangli"}, "password": {initialPassword}, "role": {"operator"}})
	wantRedirect(t, "create a user", resp, body, "/users")
	if e := c.lastAudit("user.create"); e.ParamMap()["must_change"] != "true" {
		t.Errorf("user.create audited with %v, want must_change", e.ParamMap())
	}
	_, key, err := c.store.Access().CreateAPIKey(ctx, "zhangli-key", access.ScopeRead, "zhangli")
	if err != nil {
		t.Fatal(err)
	}

	zl := c.signInAs("zhangli", initialPassword)
	for _, path := range []string{"/", "/messages", "/compose", "/audit"} {
		resp, body := zl.get(path)
		wantRedirect(t, path+" before the change", resp, body, "/password")
	}
	resp, body = zl.getHX("/dashboard/live")
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("HX-Redirect") != "/password" {
		t.Errorf("htmx request before the change: %d, HX-Redirect %q", resp.StatusCode, resp.Header.Get("HX-Redirect"))
	}
	resp, body = zl.get("/password")
	wantStatus(t, "password page", resp, body, http.StatusOK)
	wantContains(t, "password page", body, `id="must-change"`)
	resp, body = zl.do("GET", "/api/v1/messages", "", nil, map[string]string{"Authorization": "Bearer " + key})
	wantStatus(t, "API with the user's key", resp, body, http.StatusOK)

	resp, body = zl.post("/password", url.Values{"current_password": {initialPassword}, "new_password": {"my-own-password-77"}})
	wantStatus(t, "change password", resp, body, http.StatusOK)
	wantNotContains(t, "after the change", body, `id="must-change"`)
	resp, body = zl.get("/")
	wantStatus(t, "dashboard after the change", resp, body, http.StatusOK)

	u, err := c.store.Access().UserByUsername(ctx, "zhangli")
	if err != nil {
		t.Fatal(err)
	}
	resp, body = admin.post("/users/"+itoa64(u.ID)+"/password", url.Values{"password": {"reset-by-admin-99"}})
	if resp.StatusCode >= http.StatusBadRequest {
		t.Fatalf("reset: %d %s", resp.StatusCode, body)
	}
	resp, body = c.signInAs("zhangli", "reset-by-admin-99").get("/")
	wantRedirect(t, "after a reset", resp, body, "/password")

	resp, body = c.as(operatorUser).get("/")
	wantStatus(t, "a user made on the command line", resp, body, http.StatusOK)
}

// 我的账户 lists the sessions by browser and system, not the raw User-Agent, each with
// its own sign-out: another device's ends (it must sign in again), audited.
func TestSignOutOneSession(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	phone, desk := c.login(viewerUser), c.login(viewerUser)
	wechat := "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 MicroMessenger/8.0.50(0x1800323d) NetType/WIFI Language/zh_CN"
	// The phone's session is made again with its own browser's User-Agent.
	phone = c.login("")
	resp, body := phone.do("POST", "/login", "application/x-www-form-urlencoded", strings.NewReader(url.Values{"username": {viewerUser}, "password": {testPassword}}.Encode()),
		map[string]string{"User-Agent": wechat})
	wantRedirect(t, "sign in on the phone", resp, body, "/")

	resp, body = desk.do("GET", "/password", "", nil, map[string]string{"Accept-Language": "zh-CN"})
	wantStatus(t, "my account", resp, body, http.StatusOK)
	wantContains(t, "my account", body, "微信 · iOS")
	wantNotContains(t, "my account", body, ">"+wechat)
	sessions, err := c.store.Access().UserSessions(t.Context(), c.user(viewerUser).ID, idleOfConsole)
	if err != nil {
		t.Fatal(err)
	}
	var phoneSession string
	for _, s := range sessions {
		if strings.Contains(s.UserAgent, "MicroMessenger") {
			phoneSession = s.ID
		}
	}
	if phoneSession == "" {
		t.Fatalf("no session of the phone among %d", len(sessions))
	}
	wantContains(t, "my account", body, `action="/sessions/`+phoneSession+`/sign-out"`)
	resp, body = desk.post("/sessions/"+phoneSession+"/sign-out", nil)
	wantRedirect(t, "sign the phone out", resp, body, "/password")
	resp, body = phone.get("/")
	wantRedirect(t, "the phone after its sign-out", resp, body, "/login")
	resp, body = desk.get("/")
	wantStatus(t, "the desk after the phone's sign-out", resp, body, http.StatusOK)
	if e := c.lastAudit("user.session_sign_out"); e.ParamMap()["browser"] != "wechat" || e.ParamMap()["system"] != "ios" {
		t.Errorf("sign-out audited as %v", e.ParamMap())
	}
	// Again: it is gone, and the page says so.
	resp, body = desk.post("/sessions/"+phoneSession+"/sign-out", nil)
	wantRedirect(t, "sign out again", resp, body, "/password")
	// Someone else's session is not theirs to end.
	other := c.login(operatorUser)
	resp, body = other.post("/sessions/"+sessions[0].ID+"/sign-out", nil)
	wantRedirect(t, "another user's session", resp, body, "/password")
	resp, body = desk.get("/")
	wantStatus(t, "the desk after someone else tried", resp, body, http.StatusOK)
}

// In a browser (Chinese, 390, 768 and 1366 px): a new user signs in with the initial
// password, lands on the password form, changes it and reaches the dashboard; then, on
// 我的账户, signs out another session with the button beside it, confirming.
func TestBrowserInitialPasswordAndSessionSignOut(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	q := chromedp.ByQuery
	for i, width := range []int64{390, 768, 1366} {
		name := "user" + itoa64(int64(i))
		resp, body := c.as(adminUser).post("/users", url.Values{"username": {name}, "password": {initialPassword}, "role": {"viewer"}})
		wantRedirect(t, "create a user", resp, body, "/users")
		other := c.signInAs(name, initialPassword)

		ctx := c.chineseBrowserWith(t, width, name, initialPassword, `#must-change`)
		chromedp.ListenTarget(ctx, func(ev any) {
			if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
				go chromedp.Run(ctx, page.HandleJavaScriptDialog(true))
			}
		})
		var location string
		err := chromedp.Run(ctx,
			chromedp.SendKeys(`#current_password`, initialPassword, q),
			chromedp.SendKeys(`#new_password`, "a-password-of-mine-"+itoa64(int64(i)), q),
			chromedp.Submit(`#new_password`, q),
			chromedp.WaitVisible(`.alert.ok`, q),
			chromedp.Navigate(c.url+"/"),
			chromedp.WaitVisible(`#waiting`, q),
			chromedp.Location(&location),
		)
		if err != nil || !strings.HasSuffix(location, "/") {
			t.Fatalf("%d px: after the change at %q: %v", width, location, err)
		}
		// The password change signed the other session out; sign it in again and end it
		// from the list.
		other = c.signInAs(name, "a-password-of-mine-"+itoa64(int64(i)))
		var before, after int
		err = chromedp.Run(ctx,
			chromedp.Navigate(c.url+"/password"),
			chromedp.WaitVisible(`tr[data-session="other"] button`, q),
			chromedp.Evaluate(`document.querySelectorAll('tr[data-session]').length`, &before),
			chromedp.Click(`tr[data-session="other"] button`, q),
			chromedp.WaitVisible(`.alert.ok`, q),
			chromedp.Evaluate(`document.querySelectorAll('tr[data-session]').length`, &after),
		)
		if err != nil {
			t.Fatalf("%d px: sign out a session: %v", width, err)
		}
		if before != 2 || after != 1 {
			t.Errorf("%d px: %d sessions before the sign-out, %d after; want 2 and 1", width, before, after)
		}
		resp, body = other.get("/")
		wantRedirect(t, "the signed-out session", resp, body, "/login")
	}
}

// chineseBrowserWith is Chromium at width px reading the console in Chinese, signed in
// as username with password, on the page that shows ready.
func (c *console) chineseBrowserWith(t *testing.T, width int64, username, password, ready string) context.Context {
	t.Helper()
	ctx := testenv.Chrome(t)
	q := chromedp.ByQuery
	if err := chromedp.Run(ctx,
		network.SetExtraHTTPHeaders(network.Headers{"Accept-Language": "zh-CN,zh;q=0.9"}),
		chromedp.EmulateViewport(width, 900),
		chromedp.Navigate(c.url+"/login"),
		chromedp.WaitVisible(`#username`, q),
		chromedp.SendKeys(`#username`, username, q),
		chromedp.SendKeys(`#password`, password, q),
		chromedp.Submit(`#password`, q),
		chromedp.WaitVisible(ready, q),
	); err != nil {
		t.Fatalf("log in as %s: %v", username, err)
	}
	return ctx
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// idleOfConsole is the idle timeout of the test console's sessions (newConsole).
const idleOfConsole = 30 * time.Minute
