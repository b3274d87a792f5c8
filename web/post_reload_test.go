package web_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"herald/internal/testenv"
)

// A page that answers a console form's POST (here an API key shown once, and a form
// refused with its errors) stands in the browser's history as the form's own page, the
// Referer's path when it is the console's: a reload reads that page and sends nothing
// again.
func TestPageAnsweringAPostNamesTheFormsPage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	admin := c.as(adminUser)
	form := url.Values{"name": {"erp"}, "scopes": {"send"}}
	for _, tc := range []struct{ referer, want string }{
		{c.url + "/api-keys?page=2", `data-replace-url="/api-keys"`},
		{"https://elsewhere.example/api-keys/x", `data-replace-url="/api-keys"`},
		{"", `data-replace-url="/api-keys"`},
	} {
		resp, body := admin.do("POST", "/api-keys", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()),
			map[string]string{"Referer": tc.referer})
		if resp.StatusCode != 201 || !strings.Contains(body, tc.want) {
			t.Errorf("POST /api-keys from %q: %d, want 201 with %s", tc.referer, resp.StatusCode, tc.want)
		}
	}
	resp, body := admin.do("POST", "/duty/rotations", "application/x-www-form-urlencoded", strings.NewReader("name="),
		map[string]string{"Referer": c.url + "/duty/rotations/new"})
	if resp.StatusCode != 422 || !strings.Contains(body, `data-replace-url="/duty/rotations/new"`) {
		t.Errorf("a refused rotation: %d, want 422 standing as /duty/rotations/new", resp.StatusCode)
	}
	// A page asked for with GET stands as itself.
	if _, body := admin.get("/api-keys"); !strings.Contains(body, `data-replace-url=""`) {
		t.Error("GET /api-keys names a page to stand as")
	}
}

// In a browser: the API key form shows the new key once; reloading that page shows the
// list of keys, with the one key made and no secret; a refused sign-in reloads as the
// sign-in page without sending the password again.
func TestBrowserReloadAfterAFormSendsNothingAgain(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(adminUser)
	ctx := testenv.Chrome(t)
	q := chromedp.ByQuery
	browserSignIn(t, ctx, c, adminUser)
	var path, secret, after string
	if err := chromedp.Run(ctx,
		chromedp.Navigate(c.url+"/api-keys"), chromedp.WaitVisible(`#name`, q),
		chromedp.SendKeys(`#name`, "erp", q),
		chromedp.Submit(`#name`, q), chromedp.WaitVisible(`#secret`, q),
		chromedp.Value(`#secret`, &secret, q),
		chromedp.Evaluate(`location.pathname`, &path),
		chromedp.Reload(), chromedp.WaitVisible(`#name`, q),
		chromedp.OuterHTML(`main`, &after, q),
	); err != nil {
		t.Fatal(err)
	}
	if path != "/api-keys" {
		t.Errorf("the page showing the key stands as %q, want /api-keys", path)
	}
	if n := testenv.Count(t, c.store, "SELECT COUNT(*) FROM api_keys WHERE name = 'erp'"); n != 1 {
		t.Errorf("%d keys named erp after a reload, want 1", n)
	}
	if secret == "" || strings.Contains(after, secret) {
		t.Errorf("after the reload the page shows the key (%t) or there was none (%q)", strings.Contains(after, secret), secret)
	}

	signedOut := testenv.Chrome(t)
	var loginPath string
	if err := chromedp.Run(signedOut,
		chromedp.Navigate(c.url+"/login"), chromedp.WaitVisible(`#username`, q),
		chromedp.SendKeys(`#username`, adminUser, q), chromedp.SendKeys(`#password`, "not-the-password", q),
		chromedp.Submit(`#password`, q), chromedp.WaitVisible(`.alert.error`, q),
		chromedp.Evaluate(`location.pathname`, &loginPath),
		chromedp.Reload(), chromedp.WaitVisible(`#username`, q),
	); err != nil {
		t.Fatal(err)
	}
	if loginPath != "/login" {
		t.Errorf("a refused sign-in stands as %q, want /login", loginPath)
	}
	if n := testenv.Count(t, c.store, "SELECT COUNT(*) FROM audit_log WHERE action = 'user.login_failed'"); n != 1 {
		t.Errorf("%d failed sign-ins recorded after a reload, want 1", n)
	}
}
