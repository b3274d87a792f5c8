package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"herald/access"
	"herald/alert"
	"herald/audit"
	"herald/duty"
	"herald/inbound"
	"herald/kernel"
	"herald/models"
	"herald/sending"
	"herald/templates"
	"herald/web"
)

// routeRoles is the least role each console route needs. The test below walks the routes
// the engine actually has, so a new route fails it until it is listed here.
var routeRoles = map[string]access.Role{
	"GET /":                                   access.RoleViewer,
	"GET /dashboard/live":                     access.RoleViewer,
	"GET /password":                           access.RoleViewer,
	"POST /password":                          access.RoleViewer,
	"POST /language":                          access.RoleViewer,
	"GET /batches/:id":                        access.RoleViewer,
	"GET /batches/:id/progress":               access.RoleViewer,
	"GET /messages":                           access.RoleViewer,
	"GET /messages/live":                      access.RoleViewer,
	"GET /messages/:id":                       access.RoleViewer,
	"GET /recipients":                         access.RoleViewer,
	"GET /recipients/export.csv":              access.RoleViewer,
	"GET /templates":                          access.RoleViewer,
	"GET /templates/:name/edit":               access.RoleViewer,
	"GET /templates/:name/diff":               access.RoleViewer,
	"GET /duty":                               access.RoleViewer,
	"GET /duty/roster":                        access.RoleViewer,
	"GET /duty/calendar":                      access.RoleViewer,
	"GET /duty/feeds":                         access.RoleViewer,
	"GET /audit":                              access.RoleViewer,
	"GET /api-reference":                      access.RoleViewer,
	"POST /batches/:id/approve":               access.RoleOperator,
	"POST /batches/:id/reject":                access.RoleOperator,
	"GET /settings":                           access.RoleAdmin,
	"POST /settings":                          access.RoleAdmin,
	"GET /compose":                            access.RoleOperator,
	"POST /compose":                           access.RoleOperator,
	"POST /compose/preview":                   access.RoleOperator,
	"GET /compose/content":                    access.RoleOperator,
	"GET /compose/people":                     access.RoleOperator,
	"POST /messages/:id/retry":                access.RoleOperator,
	"POST /messages/:id/cancel":               access.RoleOperator,
	"POST /messages/:id/recall":               access.RoleOperator,
	"POST /batches/:id/recall":                access.RoleOperator,
	"POST /batches/:id/cancel":                access.RoleOperator,
	"POST /batches/:id/withdraw":              access.RoleOperator,
	"POST /batches/:id/resend":                access.RoleOperator,
	"POST /batches/:id/recall/approve":        access.RoleOperator,
	"POST /batches/:id/recall/reject":         access.RoleOperator,
	"GET /messages/resend":                    access.RoleOperator,
	"POST /messages/resend":                   access.RoleOperator,
	"GET /recipients/new":                     access.RoleOperator,
	"POST /recipients":                        access.RoleOperator,
	"GET /recipients/import":                  access.RoleOperator,
	"GET /recipients/template.csv":            access.RoleOperator,
	"POST /recipients/import":                 access.RoleOperator,
	"GET /recipients/:id/edit":                access.RoleOperator,
	"POST /recipients/:id/edit":               access.RoleOperator,
	"POST /recipients/:id/active":             access.RoleOperator,
	"GET /templates/new":                      access.RoleOperator,
	"POST /templates":                         access.RoleOperator,
	"POST /templates/preview":                 access.RoleOperator,
	"POST /templates/:name/edit":              access.RoleOperator,
	"POST /templates/:name/delete":            access.RoleOperator,
	"POST /templates/:name/test":              access.RoleOperator,
	"POST /templates/:name/rollback":          access.RoleOperator,
	"POST /templates/:name/retire":            access.RoleOperator,
	"POST /duty/slots":                        access.RoleOperator,
	"POST /duty/slots/delete":                 access.RoleOperator,
	"POST /duty/overrides":                    access.RoleOperator,
	"POST /duty/overrides/delete":             access.RoleOperator,
	"POST /duty/holidays":                     access.RoleOperator,
	"POST /duty/holidays/delete":              access.RoleOperator,
	"GET /duty/holidays/import":               access.RoleOperator,
	"POST /duty/holidays/import":              access.RoleOperator,
	"GET /duty/holidays/national":             access.RoleOperator,
	"POST /duty/holidays/national":            access.RoleOperator,
	"GET /duty/rotations/new":                 access.RoleOperator,
	"GET /duty/swaps/new":                     access.RoleOperator,
	"POST /duty/swaps":                        access.RoleOperator,
	"POST /duty/swaps/:id/delete":             access.RoleOperator,
	"POST /duty/reminder":                     access.RoleOperator,
	"POST /duty/feeds/:id":                    access.RoleOperator,
	"POST /duty/feeds/:id/delete":             access.RoleOperator,
	"POST /duty/rotations":                    access.RoleOperator,
	"POST /duty/rotations/editor":             access.RoleOperator,
	"GET /people/pick":                        access.RoleOperator,
	"GET /duty/rotations/:name/edit":          access.RoleOperator,
	"POST /duty/rotations/:name/edit":         access.RoleOperator,
	"POST /duty/rotations/:name/delete":       access.RoleOperator,
	"GET /accounts":                           access.RoleAdmin,
	"GET /accounts/usage":                     access.RoleAdmin,
	"GET /accounts/config-fields":             access.RoleAdmin,
	"GET /accounts/new":                       access.RoleAdmin,
	"POST /accounts":                          access.RoleAdmin,
	"GET /accounts/:name/edit":                access.RoleAdmin,
	"POST /accounts/:name/edit":               access.RoleAdmin,
	"POST /accounts/:name/enabled":            access.RoleAdmin,
	"POST /accounts/:name/test":               access.RoleAdmin,
	"POST /accounts/:name/delete":             access.RoleAdmin,
	"GET /inhibit-rules":                      access.RoleAdmin,
	"GET /inhibit-rules/new":                  access.RoleAdmin,
	"POST /inhibit-rules":                     access.RoleAdmin,
	"GET /inhibit-rules/:id/edit":             access.RoleAdmin,
	"POST /inhibit-rules/:id/edit":            access.RoleAdmin,
	"POST /inhibit-rules/:id/delete":          access.RoleAdmin,
	"GET /reports":                            access.RoleViewer,
	"GET /reports/csv/:report":                access.RoleViewer,
	"GET /reports/schedules":                  access.RoleAdmin,
	"POST /reports/schedules":                 access.RoleAdmin,
	"POST /reports/schedules/:id/delete":      access.RoleAdmin,
	"GET /reports/schedules/:id/edit":         access.RoleAdmin,
	"POST /reports/schedules/:id":             access.RoleAdmin,
	"GET /chat-groups":                        access.RoleAdmin,
	"GET /chat-groups/new":                    access.RoleAdmin,
	"POST /chat-groups":                       access.RoleAdmin,
	"GET /chat-groups/:name/edit":             access.RoleAdmin,
	"POST /chat-groups/:name/edit":            access.RoleAdmin,
	"POST /chat-groups/:name/delete":          access.RoleAdmin,
	"GET /accounts/:name/usage":               access.RoleAdmin,
	"GET /users":                              access.RoleAdmin,
	"POST /users":                             access.RoleAdmin,
	"POST /users/:id/role":                    access.RoleAdmin,
	"POST /users/:id/disabled":                access.RoleAdmin,
	"POST /users/:id/password":                access.RoleAdmin,
	"GET /api-keys":                           access.RoleAdmin,
	"POST /api-keys":                          access.RoleAdmin,
	"POST /api-keys/:id/revoke":               access.RoleAdmin,
	"GET /api-keys/:id/callback":              access.RoleAdmin,
	"POST /api-keys/:id/callback":             access.RoleAdmin,
	"POST /api-keys/:id/events/:event/resend": access.RoleAdmin,
	"* " + web.MonitoringPath:                 access.RoleViewer, // Asynqmon, every method
	"GET /alerts":                             access.RoleViewer,
	"GET /alerts/live":                        access.RoleViewer,
	"GET /alerts/:id":                         access.RoleViewer,
	"POST /alerts/:id/ack":                    access.RoleOperator,
	"POST /alerts/:id/resolve":                access.RoleOperator,
	"GET /incidents":                          access.RoleViewer,
	"POST /incidents/:id/ack":                 access.RoleOperator,
	"POST /incidents/:id/resolve":             access.RoleOperator,
	"GET /escalation-policies":                access.RoleAdmin,
	"GET /escalation-policies/new":            access.RoleAdmin,
	"POST /escalation-policies":               access.RoleAdmin,
	"POST /escalation-policies/editor":        access.RoleAdmin,
	"GET /escalation-policies/:name/edit":     access.RoleAdmin,
	"POST /escalation-policies/:name/edit":    access.RoleAdmin,
	"POST /escalation-policies/:name/delete":  access.RoleAdmin,
	"GET /integrations":                       access.RoleAdmin,
	"GET /integrations/new":                   access.RoleAdmin,
	"POST /integrations":                      access.RoleAdmin,
	"GET /integrations/:name":                 access.RoleAdmin,
	"GET /integrations/:name/edit":            access.RoleAdmin,
	"POST /integrations/:name/edit":           access.RoleAdmin,
	"POST /integrations/:name/token":          access.RoleAdmin,
	"POST /integrations/:name/delete":         access.RoleAdmin,
	"GET /heartbeats":                         access.RoleAdmin,
	"GET /heartbeats/new":                     access.RoleAdmin,
	"POST /heartbeats":                        access.RoleAdmin,
	"GET /heartbeats/:name/edit":              access.RoleAdmin,
	"POST /heartbeats/:name/edit":             access.RoleAdmin,
	"POST /heartbeats/:name/token":            access.RoleAdmin,
	"POST /heartbeats/:name/delete":           access.RoleAdmin,
	"* " + web.MonitoringPath + "/*path":      access.RoleViewer,
	"GET /silences":                           access.RoleViewer,
	"GET /silences/new":                       access.RoleOperator,
	"POST /silences":                          access.RoleOperator,
	"POST /silences/preview":                  access.RoleOperator,
	"GET /silences/:id/edit":                  access.RoleOperator,
	"POST /silences/:id/edit":                 access.RoleOperator,
	"POST /silences/:id/expire":               access.RoleOperator,
	"POST /silences/:id/approve":              access.RoleOperator,
	"POST /silences/:id/reject":               access.RoleOperator,
}

// unwalked are the routes outside the console's roles: operations endpoints, assets,
// sign-in and sign-out, the bearer-key API (tested with API keys elsewhere), duty
// calendar feeds (their secret address is the credential, see TestDutyFeeds),
// acknowledgment links and the providers' callbacks (signed, see TestAckLink* and
// TestVoiceCallback*); and
// signing out everywhere, which would end the walking clients' sessions
// (TestSessionsPage checks its role).
var unwalked = []string{"/api/", "/static/", "/duty/feed/", "/ack/", "/callbacks/wecom/", "/callbacks/voice/", "/healthz", "/readyz", "/metrics", "/login", "/logout", "/sessions/"}

// walkFixtures creates what the routes' parameters name, so each request reaches its
// handler's real work rather than a 404.
func walkFixtures(t *testing.T, c *console) map[string]string {
	ctx := context.Background()
	msg := c.send(nil, "E2001")["E2001"]
	if err := c.store.Templates().CreateTemplate(ctx, &templates.Template{Name: "walk-template", MsgType: "text", Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	if err := c.store.Sending().SaveAccount(ctx, &sending.Account{Name: "walk-account", Platform: "webhook", Enabled: true, MaxAttempts: 3,
		Config: map[string]string{"url": "https://hooks.example.com/walk"}}); err != nil {
		t.Fatal(err)
	}
	target, err := c.store.Access().CreateUser(ctx, "walk-target", testPassword, access.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := c.store.Access().CreateAPIKey(ctx, "walk-key", "send", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	swap := &duty.DutySwap{AID: c.recipient("E1001").ID, ADate: "2030-01-07", BID: c.recipient("E1003").ID, BDate: "2030-01-09"}
	if err := c.store.Duty().CreateSwap(ctx, swap); err != nil {
		t.Fatal(err)
	}
	if _, err := c.store.Duty().CreateRotation(ctx, duty.RotationSpec{Name: "walk-rotation", Members: []string{"E1001"}, Start: "2026-12-01",
		TurnDays: 1, Covers: duty.CoversEveryDay}); err != nil {
		t.Fatal(err)
	}
	if err := alert.Of(c.store).CreatePolicy(ctx, &alert.EscalationPolicy{Name: "walk-policy",
		Steps: []alert.PolicyStep{{Targets: []string{"on_duty"}, Wait: "10m"}}}); err != nil {
		t.Fatal(err)
	}
	if err := inbound.NewStore(c.store.DB()).CreateIntegration(ctx, &inbound.Integration{Name: "walk-integration",
		Format: inbound.FormatEvents, Routes: inbound.Routes{}, TokenHash: kernel.HashToken("walk-token")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.h.Dispatch.Inbound().CreateHeartbeat(ctx, audit.Actor{Name: adminUser, Type: audit.ActorUser}, inbound.HeartbeatInput{
		Name: "walk-heartbeat", Interval: "1h", Route: inbound.Route{Policy: "walk-policy", Platform: "sandbox"}}); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"/integrations/:name":         "walk-integration",
		"/heartbeats/:name":           "walk-heartbeat",
		"/chat-groups/:name":          "walk-group", // no such group: a 404 page, past the role check
		"/inhibit-rules/:id":          "1",          // no such rule: a 404 page, past the role check
		"/batches/:id":                msg.BatchID,
		"/messages/:id":               msg.ID,
		"/recipients/:id":             "E2003",
		"/templates/:name":            "walk-template",
		"/accounts/:name":             "walk-account",
		"/users/:id":                  fmt.Sprint(target.ID),
		"/api-keys/:id":               fmt.Sprint(key.ID),
		"/duty/rotations/:name":       "walk-rotation",
		"/duty/feeds/:id":             fmt.Sprint(c.recipient("E1002").ID),
		"/duty/swaps/:id":             fmt.Sprint(swap.ID),
		"/alerts/:id":                 "1", // no such alert: a 404 page, past the role check
		"/incidents/:id":              "1", // no such incident: a 404 page, past the role check
		"/escalation-policies/:name":  "walk-policy",
		"/silences/:id":               "1", // no such silence: a 404 page, past the role check
		"/reports/csv/:report":        "duty",
		"/reports/schedules/:id":      "1",            // no such schedule: a 404 page, past the role check
		"/events/:event":              models.NewID(), // no such event: the answer is a 404 page, past the role check
		web.MonitoringPath + "/*path": "",
	}
}

// concretePath fills a route's parameters from the fixtures.
func concretePath(t *testing.T, route string, fixtures map[string]string) string {
	path := route
	for pattern, value := range fixtures {
		if i := strings.Index(path, pattern); i >= 0 {
			path = path[:i] + pattern[:strings.LastIndex(pattern, "/")+1] + value + path[i+len(pattern):]
		}
	}
	if strings.ContainsAny(path, ":*") {
		t.Fatalf("route %s has a parameter without a fixture", route)
	}
	return path
}

// TestEveryConsoleRouteEnforcesItsRole requests every console route the engine has as
// anonymous, viewer, operator and admin. Below the route's role the answer must be a
// redirect to the login page (anonymous; 401 with HX-Redirect for htmx) or 403; from
// it up, anything but those and 5xx: a page, a redirect elsewhere, or a validation error.
func TestEveryConsoleRouteEnforcesItsRole(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	fixtures := walkFixtures(t, c)
	clients := map[string]*client{"": c.as(""), "viewer": c.as(viewerUser), "operator": c.as(operatorUser), "admin": c.as(adminUser)}
	roles := []access.Role{"", access.RoleViewer, access.RoleOperator, access.RoleAdmin}
	seen := map[string]bool{}
	walked := 0
	for _, r := range c.engine.Routes() {
		if slices.ContainsFunc(unwalked, func(p string) bool { return strings.HasPrefix(r.Path, p) }) {
			continue
		}
		key := r.Method + " " + r.Path
		if strings.HasPrefix(r.Path, web.MonitoringPath) {
			key = "* " + r.Path
			if r.Method == http.MethodConnect {
				continue // not a request a browser sends to a page
			}
		}
		need, ok := routeRoles[key]
		if !ok {
			t.Errorf("route %s is not in routeRoles: add it with the least role it needs", key)
			continue
		}
		seen[key] = true
		path := concretePath(t, r.Path, fixtures)
		for _, role := range roles {
			cl := clients[string(role)]
			var form *strings.Reader
			contentType := ""
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				form, contentType = strings.NewReader(url.Values{}.Encode()), "application/x-www-form-urlencoded"
			}
			var resp *http.Response
			var body string
			if form != nil {
				resp, body = cl.do(r.Method, path, contentType, form, nil)
			} else {
				resp, body = cl.do(r.Method, path, "", nil, nil)
			}
			walked++
			where := fmt.Sprintf("%s %s as %q", r.Method, path, role)
			loc := resp.Header.Get("Location")
			switch {
			case role == "":
				if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/login?next=") {
					t.Errorf("%s: %d to %q, want 303 to /login", where, resp.StatusCode, loc)
				}
				hx, _ := cl.do(r.Method, path, contentType, strings.NewReader(""), map[string]string{"HX-Request": "true"})
				if hx.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(hx.Header.Get("HX-Redirect"), "/login") {
					t.Errorf("%s (htmx): %d, HX-Redirect %q, want 401 to /login", where, hx.StatusCode, hx.Header.Get("HX-Redirect"))
				}
			case !role.Allows(need):
				if resp.StatusCode != http.StatusForbidden {
					t.Errorf("%s: %d, want 403 (needs %s)", where, resp.StatusCode, need)
				}
			default:
				if resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode >= 500 ||
					strings.HasPrefix(loc, "/login") {
					t.Errorf("%s: %d to %q, want it allowed\n%.600s", where, resp.StatusCode, loc, body)
				}
			}
		}
	}
	for key := range routeRoles {
		if !seen[key] {
			t.Errorf("routeRoles lists %s, which the engine does not serve", key)
		}
	}
	if walked < 4*len(routeRoles) {
		t.Errorf("walked %d requests for %d routes", walked, len(routeRoles))
	}
}
