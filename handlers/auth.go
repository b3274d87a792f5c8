package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"herald/models"
	"herald/views"
)

// Login throttling: a window and how many failures a username or an address may have in it.
const (
	loginWindow        = time.Minute
	maxFailuresPerUser = 5
	maxFailuresPerIP   = 20
)

// LoginForm shows the sign-in page.
func (h *Handlers) LoginForm(c *gin.Context) {
	if CurrentUser(c) != nil {
		c.Redirect(http.StatusSeeOther, "/")
		return
	}
	render(c, http.StatusOK, views.LoginPage("", ""))
}

// Login checks the credentials, refusing every attempt once a username or address has
// had too many recent failures, and starts a fresh session.
func (h *Handlers) Login(c *gin.Context) {
	ctx := c.Request.Context()
	username := models.NormalizeUsername(c.PostForm("username"))
	password := c.PostForm("password")
	ip := c.ClientIP()

	byUser, byIP, err := h.Store.LoginFailuresSince(ctx, username, ip, models.Now().Add(-loginWindow))
	if err != nil {
		h.serverError(c, err)
		return
	}
	if byUser >= maxFailuresPerUser || byIP >= maxFailuresPerIP {
		h.Log.Warn("login throttled", "username", username, "ip", ip)
		render(c, http.StatusTooManyRequests, views.LoginPage(username, "Too many failed sign-ins. Wait a minute and try again."))
		return
	}
	u, err := h.Store.Authenticate(ctx, username, password)
	if errors.Is(err, models.ErrBadCredentials) {
		if err := h.Store.RecordLoginFailure(ctx, username, ip); err != nil {
			h.serverError(c, err)
			return
		}
		h.Log.Warn("login failed", "username", username, "ip", ip)
		render(c, http.StatusUnauthorized, views.LoginPage(username, "Wrong username or password."))
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	if err := h.Sessions.Start(c, u); err != nil {
		h.serverError(c, err)
		return
	}
	h.audit(c, u.Username, "user.login", "user", u.Username, "")
	c.Redirect(http.StatusSeeOther, safeNext(c.Query("next")))
}

// Logout revokes the session server-side and clears the cookie.
func (h *Handlers) Logout(c *gin.Context) {
	u := CurrentUser(c)
	if err := h.Sessions.End(c); err != nil {
		h.serverError(c, err)
		return
	}
	if u != nil {
		h.audit(c, u.Username, "user.logout", "user", u.Username, "")
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
