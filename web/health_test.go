package web_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	b := c.login("")
	if resp, body := b.get("/healthz"); resp.StatusCode != http.StatusOK || body != "ok" {
		t.Errorf("/healthz: %d %q", resp.StatusCode, body)
	}
	if resp, body := b.get("/readyz"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"redis":"ok"`) {
		t.Errorf("/readyz: %d %s", resp.StatusCode, body)
	}
}
