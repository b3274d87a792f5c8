package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"herald/web"
)

// TestMonitoringLeadsBackToHerald: Asynqmon has no link out of its own pages, so the
// page Herald serves for it carries one back to the console.
func TestMonitoringLeadsBackToHerald(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	for _, path := range []string{web.MonitoringPath + "/", web.MonitoringPath + "/queues/default"} {
		resp, body := c.as(viewerUser).get(path)
		wantStatus(t, "GET "+path, resp, body, http.StatusOK)
		wantContains(t, "Asynqmon page", body, `<body><a id="back-to-herald" href="/"`, "← Herald</a>", `<div id="root">`)
	}
}

func TestMonitoringIsInsideTheConsole(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	if resp, _ := c.login("").get("/monitoring/"); resp.StatusCode != http.StatusSeeOther ||
		!strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Errorf("anonymous /monitoring/: %d %q, want the login page", resp.StatusCode, resp.Header.Get("Location"))
	}
	viewer := c.login(viewerUser)
	if resp, body := viewer.get("/monitoring/"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "<div id=\"root\">") {
		t.Errorf("viewer /monitoring/: %d, want the Asynqmon page", resp.StatusCode)
	}
	if resp, _ := viewer.get("/monitoring/api/queues"); resp.StatusCode != http.StatusOK {
		t.Errorf("viewer reads queues: %d, want 200", resp.StatusCode)
	}
	// Pausing a queue is an action: refused for a viewer, allowed for an operator.
	if resp, _ := viewer.post("/monitoring/api/queues/normal:pause", url.Values{}); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("viewer pauses a queue: %d, want 405 (read-only)", resp.StatusCode)
	}
	operator := c.login(operatorUser)
	if resp, body := operator.post("/monitoring/api/queues/normal:pause", url.Values{}); resp.StatusCode >= 300 {
		t.Errorf("operator pauses a queue: %d %s, want success", resp.StatusCode, body)
	}
	operator.post("/monitoring/api/queues/normal:resume", url.Values{})
}
