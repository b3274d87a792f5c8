package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"herald/models"
	"herald/views"
)

// PasswordForm shows the user's own page: the change-password form and their sessions.
func (h *Handlers) PasswordForm(c *gin.Context) {
	h.renderAccount(c, http.StatusOK, false, nil)
}

func (h *Handlers) renderAccount(c *gin.Context, status int, changed bool, errs map[string]string) {
	list, err := h.Sessions.Active(c, CurrentUser(c).ID)
	if err != nil {
		h.serverError(c, err)
		return
	}
	v := views.Account{Changed: changed, Sessions: list}
	if s := CurrentSession(c); s != nil {
		v.CurrentSession = s.ID
	}
	render(c, status, views.PasswordPage(page(c, tr(c, "title.change_password"), ""), v, errs))
}

// ChangePassword sets a new password, revokes every session of the user server-side and
// starts a fresh one for this browser. Wrong current passwords count against the same
// throttle as sign-ins, and are audited.
func (h *Handlers) ChangePassword(c *gin.Context) {
	u := CurrentUser(c)
	err := h.Dispatch.ChangePassword(c.Request.Context(), actor(c), u, c.PostForm("current_password"), c.PostForm("new_password"))
	if errors.Is(err, models.ErrThrottled) {
		wait := models.RetryAfterSeconds(err)
		c.Header("Retry-After", strconv.Itoa(wait))
		h.renderAccount(c, http.StatusTooManyRequests, false,
			map[string]string{"current_password": tr(c, "users.me.throttled", "Seconds", wait)})
		return
	}
	if errs, ok := fieldErrors(c, err); ok {
		h.renderAccount(c, http.StatusUnprocessableEntity, false, errs)
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
	// The page lists the fresh session, which the middleware did not load.
	h.renderAccount(c, http.StatusOK, true, nil)
}

// SignOutEverywhere revokes every session of the user, this one included, and goes to
// the sign-in page.
func (h *Handlers) SignOutEverywhere(c *gin.Context) {
	u := CurrentUser(c)
	if err := h.Dispatch.SignOutEverywhere(c.Request.Context(), actor(c), u); err != nil {
		h.serverError(c, err)
		return
	}
	// This browser's session went with the others: End clears its cookie.
	if err := h.Sessions.End(c); err != nil {
		h.serverError(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/login")
}

// SetLanguage stores the console language the user chose (or none, to follow the
// browser) and goes back to the page the choice was made on.
func (h *Handlers) SetLanguage(c *gin.Context) {
	u := CurrentUser(c)
	lang := c.PostForm("language")
	if err := h.Dispatch.SetUserLanguage(c.Request.Context(), actor(c), u, lang); err != nil {
		if errs, ok := fieldErrors(c, err); ok {
			h.renderAccount(c, http.StatusUnprocessableEntity, false, errs)
			return
		}
		h.serverError(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, safeNext(c.PostForm("next")))
}
