package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"herald/access"
	"herald/audit"
)

func TestUsersPage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	for name := range userRoles {
		c.user(name)
	}
	admin := c.as(adminUser)
	self := c.user(adminUser)
	usersPath := func(u *access.User, action string) string { return fmt.Sprintf("/users/%d/%s", u.ID, action) }

	t.Run("list", func(t *testing.T) {
		resp, body := admin.get("/users")
		wantStatus(t, "GET /users", resp, body, http.StatusOK)
		wantContains(t, "user list", body, adminUser, operatorUser, viewerUser, ">you<")
		wantNotContains(t, "user list", body, usersPath(self, "role"), usersPath(self, "disabled"))
		resp, body = c.as(operatorUser).get("/users")
		wantStatus(t, "operator GET /users", resp, body, http.StatusForbidden)
	})

	t.Run("create validates and keeps the input", func(t *testing.T) {
		resp, body := admin.post("/users", url.Values{"username": {"newbie"}, "role": {"operator"}, "password": {"short"}})
		wantStatus(t, "short password", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "password", "must be at least 10 characters")
		wantContains(t, "form keeps input", body, `value="newbie"`, `<option value="operator" selected`)

		resp, body = admin.post("/users", url.Values{"username": {"x"}, "role": {"operator"}, "password": {"long-enough-pw"}})
		wantStatus(t, "bad username", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "username", "use 2–64 letters, digits, dots, dashes or underscores")

		resp, body = admin.post("/users", url.Values{"username": {"newbie"}, "role": {"operator"}, "password": {"long-enough-pw"}})
		wantRedirect(t, "create", resp, body, "/users")
		resp, _ = c.login("").post("/login", url.Values{"username": {"newbie"}, "password": {"long-enough-pw"}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("the new user cannot sign in: %d", resp.StatusCode)
		}
		if a := c.lastAudit("user.create"); a.TargetID != "newbie" || a.ParamMap()["role"] != "operator" {
			t.Errorf("audit %+v", a)
		}

		resp, body = admin.post("/users", url.Values{"username": {"newbie"}, "role": {"viewer"}, "password": {"long-enough-pw"}})
		wantStatus(t, "duplicate", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "username", "is already taken")
	})

	t.Run("an admin cannot demote or disable themself", func(t *testing.T) {
		resp, body := admin.post(usersPath(self, "role"), url.Values{"role": {"viewer"}})
		wantStatus(t, "self-demotion", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "user list", body, "You cannot change the role of yourself")
		resp, body = admin.post(usersPath(self, "disabled"), url.Values{"disabled": {"true"}})
		wantStatus(t, "self-disable", resp, body, http.StatusUnprocessableEntity)
		if u, _ := c.store.Access().UserByID(ctx, self.ID); u.Role != access.RoleAdmin || u.Disabled {
			t.Errorf("admin after refused self-changes: %+v", u)
		}
	})

	t.Run("change role applies at once", func(t *testing.T) {
		vera := c.login(viewerUser)
		if resp, _ := vera.get("/compose"); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("viewer GET /compose: %d", resp.StatusCode)
		}
		resp, body := admin.post(usersPath(c.user(viewerUser), "role"), url.Values{"role": {"operator"}})
		wantRedirect(t, "promote", resp, body, "/users")
		if resp, _ := vera.get("/compose"); resp.StatusCode != http.StatusOK {
			t.Errorf("promoted user GET /compose: %d", resp.StatusCode)
		}
		if a := c.lastAudit("user.role"); a.ParamMap()["old_role"] != "viewer" || a.ParamMap()["role"] != "operator" {
			t.Errorf("audit %+v", a)
		}
		resp, body = admin.post(usersPath(c.user(viewerUser), "role"), url.Values{"role": {"root"}})
		wantStatus(t, "unknown role", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "user list", body, "role must be viewer, operator or admin")
		admin.post(usersPath(c.user(viewerUser), "role"), url.Values{"role": {"viewer"}})
	})

	t.Run("disable signs the user out; enable lets them back", func(t *testing.T) {
		otto := c.login(operatorUser)
		resp, body := admin.post(usersPath(c.user(operatorUser), "disabled"), url.Values{"disabled": {"true"}})
		wantRedirect(t, "disable", resp, body, "/users")
		if n, _ := c.store.Access().SessionCount(ctx, c.user(operatorUser).ID); n != 0 {
			t.Errorf("disabled user has %d sessions", n)
		}
		resp, _ = otto.get("/")
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
			t.Errorf("disabled user's session: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		resp, _ = c.login("").post("/login", url.Values{"username": {operatorUser}, "password": {testPassword}})
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("disabled user signs in: %d", resp.StatusCode)
		}
		c.lastAudit("user.disable")
		resp, body = admin.post(usersPath(c.user(operatorUser), "disabled"), url.Values{"disabled": {"false"}})
		wantRedirect(t, "enable", resp, body, "/users")
		c.login(operatorUser) // signs in again
	})

	t.Run("reset password signs the user out", func(t *testing.T) {
		vera := c.login(viewerUser)
		resp, body := admin.post(usersPath(c.user(viewerUser), "password"), url.Values{"password": {"short"}})
		wantStatus(t, "short password", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "user list", body, "New password for vera: password must be at least 10 characters")
		resp, body = admin.post(usersPath(c.user(viewerUser), "password"), url.Values{"password": {"brand-new-password"}})
		wantRedirect(t, "reset", resp, body, "/users")
		if resp, _ := vera.get("/"); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("session after a password reset: %d", resp.StatusCode)
		}
		resp, _ = c.login("").post("/login", url.Values{"username": {viewerUser}, "password": {"brand-new-password"}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("sign in with the new password: %d", resp.StatusCode)
		}
		if a := c.lastAudit("user.password_reset"); a.TargetID != viewerUser || a.Actor != adminUser {
			t.Errorf("audit %+v", a)
		}
		resp, body = admin.post(usersPath(self, "password"), url.Values{"password": {"brand-new-password"}})
		wantStatus(t, "own reset", resp, body, http.StatusUnprocessableEntity)
	})
}

func TestAPIKeysPage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	admin := c.as(adminUser)

	resp, body := admin.get("/api-keys")
	wantStatus(t, "GET /api-keys", resp, body, http.StatusOK)
	wantContains(t, "key list", body, "No API keys yet")

	resp, body = admin.post("/api-keys", url.Values{"name": {"ledger"}})
	wantStatus(t, "no scopes", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "scopes", "name at least one scope: send, read or admin")
	wantContains(t, "form keeps input", body, `value="ledger"`)
	resp, body = admin.post("/api-keys", url.Values{"name": {"ledger"}, "scopes": {"send", "write"}})
	wantStatus(t, "unknown scope", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "scopes", `&#34;write&#34; is not a scope (send, read, admin)`)

	resp, body = admin.post("/api-keys", url.Values{"name": {"ledger"}, "scopes": {"send", "read"}})
	wantStatus(t, "create", resp, body, http.StatusCreated)
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	m := regexp.MustCompile(`value="(hk_[0-9a-f]{12}_[0-9a-f]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no secret on the result page:\n%s", body)
	}
	k, err := c.store.Access().AuthenticateAPIKey(ctx, m[1])
	if err != nil || k.Scopes != "read,send" || k.CreatedBy != adminUser {
		t.Fatalf("the shown secret authenticates %+v, %v", k, err)
	}
	_, body = admin.get("/api-keys")
	wantContains(t, "key list", body, "ledger", "hk_"+k.Prefix+"_…", "read, send")
	wantNotContains(t, "key list", body, m[1])
	if a := c.lastAudit("apikey.create"); a.TargetID != "ledger" {
		t.Errorf("audit %+v", a)
	}

	resp, body = admin.post(fmt.Sprintf("/api-keys/%d/revoke", k.ID), nil)
	wantRedirect(t, "revoke", resp, body, "/api-keys")
	if _, err := c.store.Access().AuthenticateAPIKey(ctx, m[1]); err == nil {
		t.Error("a revoked key still authenticates")
	}
	resp, body = admin.post(fmt.Sprintf("/api-keys/%d/revoke", k.ID), nil)
	wantStatus(t, "revoke twice", resp, body, http.StatusConflict)
	wantContains(t, "key list", body, "was already revoked")
	c.lastAudit("apikey.revoke")

	resp, body = c.as(operatorUser).post("/api-keys", url.Values{"name": {"x"}, "scopes": {"send"}})
	wantStatus(t, "operator creates a key", resp, body, http.StatusForbidden)
}

func TestAuditPage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	for i := range 60 {
		if err := c.store.AuditLog().Write(ctx, audit.Entry{Actor: "apikey:ledger", ActorType: "api_key", Action: "template.update",
			TargetType: "template", TargetID: fmt.Sprintf("t%02d", i), IP: "10.0.0.1"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.store.AuditLog().Write(ctx, audit.Entry{Actor: adminUser, ActorType: "user", Action: "account.delete",
		TargetType: "account", TargetID: "old-acct", IP: "10.0.0.2"}); err != nil {
		t.Fatal(err)
	}
	viewer := c.as(viewerUser)
	resp, body := viewer.get("/audit")
	wantStatus(t, "GET /audit", resp, body, http.StatusOK)
	wantContains(t, "audit log", body, "account.delete", "old-acct", "10.0.0.2", "user.login", `rel="next"`)

	_, body = viewer.get("/audit?action=template.&target=t59")
	if n := strings.Count(body, `data-audit="template.update"`); n != 1 {
		t.Errorf("action group and target filter: %d rows", n)
	}
	_, body = viewer.get("/audit?actor=" + url.QueryEscape("apikey:ledger"))
	next := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(body)
	if n := strings.Count(body, `data-audit="template.update"`); n != 50 || next == nil {
		t.Fatalf("first page of apikey:ledger: %d rows, next %v", n, next)
	}
	_, body = viewer.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	if n := strings.Count(body, `data-audit="template.update"`); n != 10 || !strings.Contains(body, "t00") {
		t.Errorf("second page: %d rows", n)
	}
	_, body = viewer.get("/audit?from=" + c.today(1))
	wantContains(t, "future range", body, "No entries match")
	resp, body = viewer.get("/audit?to=31-12-2026")
	wantStatus(t, "bad date", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "to", "must be a date as YYYY-MM-DD")
}
