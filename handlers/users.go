package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/i18n"
	"herald/kernel"
	"herald/views"
)

// Users lists console users.
func (h *Handlers) Users(c *gin.Context) {
	h.renderUsers(c, http.StatusOK, views.UserForm{}, nil)
}

func (h *Handlers) renderUsers(c *gin.Context, status int, f views.UserForm, errs map[string]string) {
	list, err := h.Store.Access().Users(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	v := views.Users{List: list, Self: CurrentUser(c).ID, Form: f, Notice: h.notice(c)}
	render(c, status, views.UsersPage(page(c, tr(c, "title.users"), "users"), v, errs))
}

// CreateUser adds a console user with an initial password.
func (h *Handlers) CreateUser(c *gin.Context) {
	f := views.UserForm{Username: c.PostForm("username"), Role: c.PostForm("role")}
	u, err := h.Dispatch.Access().CreateUser(c.Request.Context(), actor(c), f.Username, c.PostForm("password"), access.Role(f.Role))
	if errs, ok := fieldErrors(c, err); ok {
		h.renderUsers(c, http.StatusUnprocessableEntity, f, errs)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.redirectNotice(c, "/users", "created", tr(c, "users.subject_user", "Name", u.Username))
}

// targetUser loads the user named in the path. Admins manage others here, never
// themselves: demoting or disabling oneself could leave no admin, and one's own
// password is changed with the current one on /password. selfKey is the catalog
// message that refuses the action on oneself.
func (h *Handlers) targetUser(c *gin.Context, selfKey string) (*access.User, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		ErrorPage(c, http.StatusNotFound, "error.no_user", "ID", c.Param("id"))
		return nil, false
	}
	u, err := h.Store.Access().UserByID(c.Request.Context(), id)
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_user", "ID", c.Param("id")))
		return nil, false
	}
	if u.ID == CurrentUser(c).ID {
		h.renderUsers(c, http.StatusUnprocessableEntity, views.UserForm{}, map[string]string{"": tr(c, selfKey)})
		return nil, false
	}
	return u, true
}

// SetUserRole changes another user's role.
func (h *Handlers) SetUserRole(c *gin.Context) {
	u, ok := h.targetUser(c, "users.self_role")
	if !ok {
		return
	}
	role := access.Role(c.PostForm("role"))
	err := h.Dispatch.Access().SetUserRole(c.Request.Context(), actor(c), u, role)
	var fe *kernel.FieldError
	if errors.As(err, &fe) {
		h.renderUsers(c, http.StatusUnprocessableEntity, views.UserForm{},
			map[string]string{"": tr(c, "users.role_failed", "Name", u.Username, "Message", fe.In(c.Request.Context()))})
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.redirectNotice(c, "/users", "role", tr(c, "users.subject_role", "Name", u.Username, "Role", i18n.Name(c.Request.Context(), "role", string(role))))
}

// SetUserDisabled disables another user, revoking their sessions, or enables them again.
func (h *Handlers) SetUserDisabled(c *gin.Context) {
	u, ok := h.targetUser(c, "users.self_disable")
	if !ok {
		return
	}
	disabled := c.PostForm("disabled") == "true"
	if err := h.Dispatch.Access().SetUserDisabled(c.Request.Context(), actor(c), u, disabled); err != nil {
		h.fail(c, err)
		return
	}
	notice := "enabled"
	if disabled {
		notice = "disabled"
	}
	h.redirectNotice(c, "/users", notice, tr(c, "users.subject_user", "Name", u.Username))
}

// ResetUserPassword sets a new password for another user and signs them out everywhere.
func (h *Handlers) ResetUserPassword(c *gin.Context) {
	u, ok := h.targetUser(c, "users.self_password")
	if !ok {
		return
	}
	err := h.Dispatch.Access().ResetPassword(c.Request.Context(), actor(c), u, c.PostForm("password"))
	var fe *kernel.FieldError
	if errors.As(err, &fe) {
		h.renderUsers(c, http.StatusUnprocessableEntity, views.UserForm{},
			map[string]string{"": tr(c, "users.password_failed", "Name", u.Username, "Message", fe.In(c.Request.Context()))})
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.redirectNotice(c, "/users", "password", u.Username)
}
