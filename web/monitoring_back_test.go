package web_test

import (
	"net/http"
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
