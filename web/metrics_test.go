package web_test

import (
	"net/http"
	"strings"
	"testing"

	"herald/web"
)

// The console listener faces browsers: /metrics is not there unless a token guards it.
func TestMetricsNotOnTheConsoleWithoutToken(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	for _, user := range []string{"", adminUser} {
		if resp, _ := c.as(user).get("/metrics"); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /metrics as %q: %d, want 404", user, resp.StatusCode)
		}
	}
}

func TestMetricsOnTheConsoleNeedTheToken(t *testing.T) {
	t.Parallel()
	const token = "metrics-test-token-0123456789abcdef"
	c := newConsole(t, func(o *web.Options) { o.MetricsToken = token })
	cl := c.as("")
	for _, auth := range []string{"", "Bearer", "Bearer wrong-token", "Basic " + token, "Bearer " + token + "x"} {
		resp, _ := cl.do("GET", "/metrics", "", nil, map[string]string{"Authorization": auth})
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("GET /metrics with Authorization %q: %d, want 401 asking for a bearer token", auth, resp.StatusCode)
		}
	}
	resp, body := cl.do("GET", "/metrics", "", nil, map[string]string{"Authorization": "Bearer " + token})
	wantStatus(t, "GET /metrics with the token", resp, body, http.StatusOK)
	wantContains(t, "/metrics", body, "herald_oldest_due_message_age_seconds")
}
