package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"herald/views"
)

// PasswordForm shows the change-password form.
func (h *Handlers) PasswordForm(c *gin.Context) {
	render(c, http.StatusOK, views.PasswordPage(page(c, "Change password", ""), nil, false))
}

// ChangePassword sets a new password, revokes every session of the user server-side and
// starts a fresh one for this browser.
func (h *Handlers) ChangePassword(c *gin.Context) {
	u := CurrentUser(c)
	err := h.Store.ChangePassword(c.Request.Context(), u.ID, c.PostForm("current_password"), c.PostForm("new_password"))
	if errs, ok := fieldErrors(err); ok {
		render(c, http.StatusUnprocessableEntity, views.PasswordPage(page(c, "Change password", ""), errs, false))
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
	h.audit(c, u.Username, "user.password_change", "user", u.Username, "")
	render(c, http.StatusOK, views.PasswordPage(page(c, "Change password", ""), nil, true))
}
