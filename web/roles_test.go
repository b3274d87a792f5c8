package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"herald/models"
	"herald/web"
)

// routeRoles is the least role each console route needs. The test below walks the routes
// the engine actually has, so a new route fails it until it is listed here.
var routeRoles = map[string]models.Role{
	"GET /":                                   models.RoleViewer,
	"GET /dashboard/live":                     models.RoleViewer,
	"GET /password":                           models.RoleViewer,
	"POST /password":                          models.RoleViewer,
	"POST /language":                          models.RoleViewer,
	"GET /batches/:id":                        models.RoleViewer,
	"GET /batches/:id/progress":               models.RoleViewer,
	"GET /messages":                           models.RoleViewer,
	"GET /messages/live":                      models.RoleViewer,
	"GET /messages/:id":                       models.RoleViewer,
	"GET /recipients":                         models.RoleViewer,
	"GET /recipients/export.csv":              models.RoleViewer,
	"GET /templates":                          models.RoleViewer,
	"GET /templates/:name/edit":               models.RoleViewer,
	"GET /templates/:name/diff":               models.RoleViewer,
	"GET /duty":                               models.RoleViewer,
	"GET /duty/roster":                        models.RoleViewer,
	"GET /duty/calendar":                      models.RoleViewer,
	"GET /duty/feeds":                         models.RoleViewer,
	"GET /audit":                              models.RoleViewer,
	"GET /api-reference":                      models.RoleViewer,
	"POST /batches/:id/approve":               models.RoleOperator,
	"POST /batches/:id/reject":                models.RoleOperator,
	"GET /settings":                           models.RoleAdmin,
	"POST /settings":                          models.RoleAdmin,
	"GET /compose":                            models.RoleOperator,
	"POST /compose":                           models.RoleOperator,
	"POST /compose/preview":                   models.RoleOperator,
	"GET /compose/content":                    models.RoleOperator,
	"GET /compose/people":                     models.RoleOperator,
	"POST /messages/:id/retry":                models.RoleOperator,
	"POST /messages/:id/cancel":               models.RoleOperator,
	"POST /messages/:id/recall":               models.RoleOperator,
	"POST /batches/:id/recall":                models.RoleOperator,
	"POST /batches/:id/cancel":                models.RoleOperator,
	"POST /batches/:id/resend":                models.RoleOperator,
	"POST /batches/:id/recall/approve":        models.RoleOperator,
	"POST /batches/:id/recall/reject":         models.RoleOperator,
	"GET /messages/resend":                    models.RoleOperator,
	"POST /messages/resend":                   models.RoleOperator,
	"GET /recipients/new":                     models.RoleOperator,
	"POST /recipients":                        models.RoleOperator,
	"GET /recipients/import":                  models.RoleOperator,
	"GET /recipients/template.csv":            models.RoleOperator,
	"POST /recipients/import":                 models.RoleOperator,
	"GET /recipients/:id/edit":                models.RoleOperator,
	"POST /recipients/:id/edit":               models.RoleOperator,
	"POST /recipients/:id/active":             models.RoleOperator,
	"GET /templates/new":                      models.RoleOperator,
	"POST /templates":                         models.RoleOperator,
	"POST /templates/preview":                 models.RoleOperator,
	"POST /templates/:name/edit":              models.RoleOperator,
	"POST /templates/:name/delete":            models.RoleOperator,
	"POST /templates/:name/test":              models.RoleOperator,
	"POST /templates/:name/rollback":          models.RoleOperator,
	"POST /templates/:name/retire":            models.RoleOperator,
	"POST /duty/slots":                        models.RoleOperator,
	"POST /duty/slots/delete":                 models.RoleOperator,
	"POST /duty/overrides":                    models.RoleOperator,
	"POST /duty/overrides/delete":             models.RoleOperator,
	"POST /duty/holidays":                     models.RoleOperator,
	"POST /duty/holidays/delete":              models.RoleOperator,
	"GET /duty/holidays/import":               models.RoleOperator,
	"POST /duty/holidays/import":              models.RoleOperator,
	"GET /duty/holidays/national":             models.RoleOperator,
	"POST /duty/holidays/national":            models.RoleOperator,
	"GET /duty/rotations/new":                 models.RoleOperator,
	"GET /duty/swaps/new":                     models.RoleOperator,
	"POST /duty/swaps":                        models.RoleOperator,
	"POST /duty/swaps/:id/delete":             models.RoleOperator,
	"POST /duty/reminder":                     models.RoleOperator,
	"POST /duty/feeds/:id":                    models.RoleOperator,
	"POST /duty/feeds/:id/delete":             models.RoleOperator,
	"POST /duty/rotations":                    models.RoleOperator,
	"GET /duty/rotations/:name/edit":          models.RoleOperator,
	"POST /duty/rotations/:name/edit":         models.RoleOperator,
	"POST /duty/rotations/:name/delete":       models.RoleOperator,
	"GET /accounts":                           models.RoleAdmin,
	"GET /accounts/usage":                     models.RoleAdmin,
	"GET /accounts/config-fields":             models.RoleAdmin,
	"GET /accounts/new":                       models.RoleAdmin,
	"POST /accounts":                          models.RoleAdmin,
	"GET /accounts/:name/edit":                models.RoleAdmin,
	"POST /accounts/:name/edit":               models.RoleAdmin,
	"POST /accounts/:name/enabled":            models.RoleAdmin,
	"POST /accounts/:name/test":               models.RoleAdmin,
	"POST /accounts/:name/delete":             models.RoleAdmin,
	"GET /accounts/:name/usage":               models.RoleAdmin,
	"GET /users":                              models.RoleAdmin,
	"POST /users":                             models.RoleAdmin,
	"POST /users/:id/role":                    models.RoleAdmin,
	"POST /users/:id/disabled":                models.RoleAdmin,
	"POST /users/:id/password":                models.RoleAdmin,
	"GET /api-keys":                           models.RoleAdmin,
	"POST /api-keys":                          models.RoleAdmin,
	"POST /api-keys/:id/revoke":               models.RoleAdmin,
	"GET /api-keys/:id/callback":              models.RoleAdmin,
	"POST /api-keys/:id/callback":             models.RoleAdmin,
	"POST /api-keys/:id/events/:event/resend": models.RoleAdmin,
	"* " + web.MonitoringPath:                 models.RoleViewer, // Asynqmon, every method
	"GET /alerts":                             models.RoleViewer,
	"GET /alerts/live":                        models.RoleViewer,
	"GET /alerts/:id":                         models.RoleViewer,
	"POST /alerts/:id/ack":                    models.RoleOperator,
	"POST /alerts/:id/resolve":                models.RoleOperator,
	"GET /escalation-policies":                models.RoleAdmin,
	"GET /escalation-policies/new":            models.RoleAdmin,
	"POST /escalation-policies":               models.RoleAdmin,
	"GET /escalation-policies/:name/edit":     models.RoleAdmin,
	"POST /escalation-policies/:name/edit":    models.RoleAdmin,
	"POST /escalation-policies/:name/delete":  models.RoleAdmin,
	"* " + web.MonitoringPath + "/*path":      models.RoleViewer,
	"GET /silences":                           models.RoleViewer,
	"GET /silences/new":                       models.RoleOperator,
	"POST /silences":                          models.RoleOperator,
	"POST /silences/preview":                  models.RoleOperator,
	"GET /silences/:id/edit":                  models.RoleOperator,
	"POST /silences/:id/edit":                 models.RoleOperator,
	"POST /silences/:id/expire":               models.RoleOperator,
	"POST /silences/:id/approve":              models.RoleOperator,
	"POST /silences/:id/reject":               models.RoleOperator,
}

// unwalked are the routes outside the console's roles: operations endpoints, assets,
// sign-in and sign-out, the bearer-key API (tested with API keys elsewhere), duty
// calendar feeds (their secret address is the credential, see TestDutyFeeds),
// acknowledgment links and WeCom's callback (signed, see TestAckLink*); and
// signing out everywhere, which would end the walking clients' sessions
// (TestSessionsPage checks its role).
var unwalked = []string{"/api/", "/static/", "/duty/feed/", "/ack/", "/callbacks/wecom/", "/healthz", "/readyz", "/metrics", "/login", "/logout", "/sessions/revoke"}

// walkFixtures creates what the routes' parameters name, so each request reaches its
// handler's real work rather than a 404.
func walkFixtures(t *testing.T, c *console) map[string]string {
	ctx := context.Background()
	msg := c.send(nil, "E2001")["E2001"]
	if err := c.store.CreateTemplate(ctx, &models.Template{Name: "walk-template", MsgType: "text", Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	if err := c.store.SaveAccount(ctx, &models.Account{Name: "walk-account", Platform: "webhook", Enabled: true, MaxAttempts: 3,
		Config: map[string]string{"url": "https://hooks.example.com/walk"}}); err != nil {
		t.Fatal(err)
	}
	target, err := c.store.CreateUser(ctx, "walk-target", testPassword, models.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := c.store.CreateAPIKey(ctx, "walk-key", "send", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	swap := &models.DutySwap{AID: c.recipient("E1001").ID, ADate: "2030-01-07", BID: c.recipient("E1003").ID, BDate: "2030-01-09"}
	if err := c.store.CreateSwap(ctx, swap); err != nil {
		t.Fatal(err)
	}
	if _, err := c.store.CreateRotation(ctx, models.RotationSpec{Name: "walk-rotation", Members: []string{"E1001"}, Start: "2026-12-01",
		TurnDays: 1, Covers: models.CoversEveryDay}); err != nil {
		t.Fatal(err)
	}
	if err := c.store.CreatePolicy(ctx, &models.EscalationPolicy{Name: "walk-policy",
		Steps: []models.PolicyStep{{Targets: []string{"on_duty"}, Wait: "10m"}}}); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
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
		"/escalation-policies/:name":  "walk-policy",
		"/silences/:id":               "1",            // no such silence: a 404 page, past the role check
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
	roles := []models.Role{"", models.RoleViewer, models.RoleOperator, models.RoleAdmin}
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
