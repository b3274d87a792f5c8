package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/kernel"
	"herald/views"
)

// PasswordForm shows the user's own page: the change-password form and their sessions.
func (h *Handlers) PasswordForm(c *gin.Context) {
	h.renderAccount(c, http.StatusOK, false, nil)
}

func (h *Handlers) renderAccount(c *gin.Context, status int, changed bool, errs map[string]string) {
	list, err := h.Sessions.Active(c, CurrentUser(c).ID)
	if err != nil {
		h.fail(c, err)
		return
	}
	v := views.Account{Changed: changed, Sessions: list, Notice: h.notice(c), MustChange: CurrentUser(c).MustChangePassword && !changed}
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
	err := h.Dispatch.Access().ChangePassword(c.Request.Context(), actor(c), u, c.PostForm("current_password"), c.PostForm("new_password"))
	if err != nil {
		wait := access.RetryAfterSeconds(err)
		h.failOr(c, err, func(a answer) {
			if wait > 0 {
				// The current password went unchecked: Retry-After says when it will be.
				c.Header("Retry-After", strconv.Itoa(wait))
				a.Field = "current_password"
			}
			h.renderAccount(c, a.Status, false, a.errs())
		}, saying(access.ErrThrottled, "users.me.throttled", "Seconds", wait))
		return
	}
	if err := h.Sessions.Start(c, u); err != nil {
		h.fail(c, err)
		return
	}
	// The page lists the fresh session, which the middleware did not load.
	h.renderAccount(c, http.StatusOK, true, nil)
}

// SignOutEverywhere revokes every session of the user, this one included, and goes to
// the sign-in page.
func (h *Handlers) SignOutEverywhere(c *gin.Context) {
	u := CurrentUser(c)
	if err := h.Dispatch.Access().SignOutEverywhere(c.Request.Context(), actor(c), u); err != nil {
		h.fail(c, err)
		return
	}
	// This browser's session went with the others: End clears its cookie.
	if err := h.Sessions.End(c); err != nil {
		h.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/login")
}

// SignOutSession ends one of the user's sessions, picked from their list: another
// device's stays signed out; this browser's goes to the sign-in page. A session that
// ended meanwhile is said so.
func (h *Handlers) SignOutSession(c *gin.Context) {
	u, id := CurrentUser(c), c.Param("id")
	err := h.Dispatch.Access().SignOutSession(c.Request.Context(), actor(c), u, id)
	switch {
	case errors.Is(err, kernel.ErrNotFound):
		h.redirectNotice(c, "/password#sessions", "note", tr(c, "people.session_gone"))
		return
	case err != nil:
		h.fail(c, err)
		return
	}
	if s := CurrentSession(c); s != nil && s.ID == id {
		if err := h.Sessions.End(c); err != nil {
			h.fail(c, err)
			return
		}
		c.Redirect(http.StatusSeeOther, "/login")
		return
	}
	h.redirectNotice(c, "/password#sessions", "note", tr(c, "people.session_signed_out"))
}

// SetLanguage stores the console language the user chose (or none, to follow the
// browser) and goes back to the page the choice was made on.
func (h *Handlers) SetLanguage(c *gin.Context) {
	u := CurrentUser(c)
	lang := c.PostForm("language")
	if err := h.Dispatch.Access().SetUserLanguage(c.Request.Context(), actor(c), u, lang); err != nil {
		if errs, ok := fieldErrors(c, err); ok {
			h.renderAccount(c, http.StatusUnprocessableEntity, false, errs)
			return
		}
		h.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, safeNext(c.PostForm("next")))
}
