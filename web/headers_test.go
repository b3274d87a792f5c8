package web_test

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"herald/web"
)

const consolePolicy = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"

// Console pages, their partials and the login page carry the console's
// Content-Security-Policy; what a signed-in user sees is never stored.
func TestConsoleSecurityHeaders(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	viewer := c.as(viewerUser)
	for _, tc := range []struct {
		what string
		cl   *client
		path string
		hx   bool
	}{
		{"login page", c.as(""), "/login", false},
		{"dashboard", viewer, "/", false},
		{"dashboard partial", viewer, "/dashboard/live", true},
		{"staff page", viewer, "/recipients", false},
	} {
		var resp *http.Response
		var body string
		if tc.hx {
			resp, body = tc.cl.getHX(tc.path)
		} else {
			resp, body = tc.cl.get(tc.path)
		}
		wantStatus(t, tc.what, resp, body, http.StatusOK)
		if got := resp.Header.Get("Content-Security-Policy"); got != consolePolicy {
			t.Errorf("%s: Content-Security-Policy %q, want %q", tc.what, got, consolePolicy)
		}
		if got := resp.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", tc.what, got)
		}
		if got := resp.Header.Get("Strict-Transport-Security"); got != "" {
			t.Errorf("%s over plain HTTP: Strict-Transport-Security %q, want none", tc.what, got)
		}
		// Nothing on the page needs what the policy refuses.
		wantNotContains(t, tc.what, body, "style=", "<script>", " hx-on", " onclick=")
	}
	// Signed-out answers behind the session are not stored either.
	if resp, _ := c.as("").get("/"); resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("redirect to the login page: Cache-Control %q, want no-store", resp.Header.Get("Cache-Control"))
	}
}

// Asynqmon's page has a policy of its own: its inline scripts allowed by hash, no web
// fonts from the internet.
func TestMonitoringSecurityHeaders(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	resp, body := c.as(viewerUser).get("/monitoring/")
	wantStatus(t, "/monitoring/", resp, body, http.StatusOK)
	policy := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "style-src 'self' 'unsafe-inline'", "frame-ancestors 'none'", "object-src 'none'"} {
		if !strings.Contains(policy, want) {
			t.Errorf("Asynqmon's policy %q lacks %q", policy, want)
		}
	}
	if strings.Contains(policy, "unsafe-eval") || strings.Contains(policy, "script-src 'self' 'unsafe-inline'") {
		t.Errorf("Asynqmon's policy %q allows any script", policy)
	}
	scripts := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindAllStringSubmatch(body, -1)
	if len(scripts) == 0 {
		t.Fatalf("Asynqmon's page has no inline script:\n%s", body)
	}
	for _, s := range scripts {
		sum := sha256.Sum256([]byte(s[1]))
		if hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(policy, hash) {
			t.Errorf("the policy does not allow the inline script %.60q… (%s)", s[1], hash)
		}
	}
	wantNotContains(t, "Asynqmon's page", body, "fonts.googleapis.com", "https://")
	// The app's own routes get the same page.
	_, deep := c.as(viewerUser).get("/monitoring/queues/normal")
	if deep != body {
		t.Errorf("/monitoring/queues/normal is not the app's page:\n%.300s", deep)
	}
}

// HSTS is sent only to browsers that came over HTTPS: directly, or through a proxy
// configured in HERALD_TRUSTED_PROXIES saying so. X-Forwarded-Proto from anyone else
// (loopback included, unless configured) is not believed, for HSTS or for the session
// cookie's Secure flag. The session cookie is HttpOnly and SameSite=Lax in every case.
func TestHSTSOnlyOverHTTPS(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.user(adminUser)
	proxied := newConsole(t, func(o *web.Options) { o.TrustedProxies = []string{"127.0.0.1", "::1/128", "10.1.0.0/16"} })
	proxied.user(adminUser)
	const hsts = "max-age=31536000; includeSubDomains"
	for _, tc := range []struct {
		what       string
		c          *console
		remoteAddr string
		tls        bool
		proto      string
		want       string
	}{
		{"plain HTTP", c, "192.0.2.1:40000", false, "", ""},
		{"TLS", c, "192.0.2.1:40000", true, "", hsts},
		{"unconfigured loopback saying https", c, "127.0.0.1:40000", false, "https", ""},
		{"configured proxy on loopback saying https", proxied, "127.0.0.1:40000", false, "https", hsts},
		{"configured IPv6 proxy on loopback saying https", proxied, "[::1]:40000", false, "https", hsts},
		{"configured proxy range saying https", proxied, "10.1.2.3:40000", false, "https", hsts},
		{"configured proxy saying http", proxied, "127.0.0.1:40000", false, "http", ""},
		{"another host saying https", proxied, "192.0.2.1:40000", false, "https", ""},
	} {
		c := tc.c
		form := url.Values{"username": {adminUser}, "password": {testPassword}}
		req := httptest.NewRequest("POST", "/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = tc.remoteAddr
		if tc.tls {
			req.TLS = &tls.ConnectionState{}
		}
		if tc.proto != "" {
			req.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		rec := httptest.NewRecorder()
		c.engine.ServeHTTP(rec, req)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("%s: login %d\n%s", tc.what, rec.Code, rec.Body)
		}
		if got := rec.Header().Get("Strict-Transport-Security"); got != tc.want {
			t.Errorf("%s: Strict-Transport-Security %q, want %q", tc.what, got, tc.want)
		}
		cookie := rec.Header().Get("Set-Cookie")
		secure := strings.Contains(strings.ToLower(cookie), "; secure")
		if secure != (tc.want != "") {
			t.Errorf("%s: session cookie Secure=%v, want %v (%s)", tc.what, secure, tc.want != "", cookie)
		}
		// Whatever the transport, scripts never read the session cookie and other sites'
		// posts never carry it.
		for _, flag := range []string{"HttpOnly", "SameSite=Lax"} {
			if !strings.Contains(cookie, flag) {
				t.Errorf("%s: session cookie %q lacks %s", tc.what, cookie, flag)
			}
		}
	}
}
