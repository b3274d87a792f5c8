package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/audit"
	"herald/views"
)

// LoginForm shows the sign-in page.
func (h *Handlers) LoginForm(c *gin.Context) {
	if CurrentUser(c) != nil {
		c.Redirect(http.StatusSeeOther, "/")
		return
	}
	render(c, http.StatusOK, views.LoginPage("", c.Query("next"), ""))
}

// Login checks the credentials and starts a fresh session. The store counts each guess
// before checking it and refuses every attempt once a username or an address has had
// too many wrong passwords; failures are audited under the username tried.
func (h *Handlers) Login(c *gin.Context) {
	username := access.NormalizeUsername(c.PostForm("username"))
	next := c.DefaultPostForm("next", c.Query("next"))
	ip := c.ClientIP()
	u, err := h.Store.Access().Authenticate(c.Request.Context(), username, c.PostForm("password"), ip)
	if err != nil {
		h.failOr(c, err, func(a answer) {
			switch {
			case errors.Is(err, access.ErrThrottled):
				// Refused at once, the password unchecked: Retry-After says when the next
				// guess may be checked.
				wait := strconv.Itoa(access.RetryAfterSeconds(err))
				c.Header("Retry-After", wait)
				h.Log.Warn("login throttled", "username", username, "ip", ip)
				h.auditOnce(c, username, "user.login_throttled", "user", username, "status 429: too many failed sign-ins", "login "+username+" "+ip,
					audit.Params{"username": username, "retry_after": wait})
			case errors.Is(err, access.ErrBadCredentials):
				h.Log.Warn("login failed", "username", username, "ip", ip)
				h.audit(c, username, "user.login_failed", "user", username, "status 401: wrong username or password",
					audit.Params{"username": username})
			}
			render(c, a.Status, views.LoginPage(username, next, a.Message))
		})
		return
	}
	if err := h.Sessions.Start(c, u); err != nil {
		h.fail(c, err)
		return
	}
	h.audit(c, u.Username, "user.login", "user", u.Username, "", audit.Params{"username": u.Username})
	c.Redirect(http.StatusSeeOther, safeNext(next))
}

// Logout revokes the session server-side and clears the cookie.
func (h *Handlers) Logout(c *gin.Context) {
	u := CurrentUser(c)
	if err := h.Sessions.End(c); err != nil {
		h.fail(c, err)
		return
	}
	if u != nil {
		h.audit(c, u.Username, "user.logout", "user", u.Username, "", audit.Params{"username": u.Username})
	}
	c.Redirect(http.StatusSeeOther, "/login")
}

// safeNext keeps a post-login redirect on this site.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if next == "" || err != nil || u.IsAbs() || u.Host != "" || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	return u.RequestURI()
}
