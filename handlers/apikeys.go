package handlers

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/kernel"
	"herald/views"
)

// APIKeys lists API keys.
func (h *Handlers) APIKeys(c *gin.Context) {
	h.renderAPIKeys(c, http.StatusOK, views.APIKeyForm{Scopes: map[string]bool{access.ScopeSend: true}}, nil)
}

func (h *Handlers) renderAPIKeys(c *gin.Context, status int, f views.APIKeyForm, errs map[string]string) {
	list, err := h.Store.Access().APIKeys(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	render(c, status, views.APIKeysPage(page(c, tr(c, "title.api_keys"), "apikeys"), views.APIKeys{List: list, Form: f, Notice: h.notice(c)}, errs))
}

// CreateAPIKey makes a key and shows its secret, once.
func (h *Handlers) CreateAPIKey(c *gin.Context) {
	f := views.APIKeyForm{Name: c.PostForm("name"), Scopes: map[string]bool{},
		MaxRecipients: c.PostForm("max_recipients_per_request"), Expires: c.PostForm("expires")}
	scopes := c.PostFormArray("scopes")
	for _, s := range scopes {
		f.Scopes[s] = true
	}
	k, secret, err := h.Dispatch.Access().CreateAPIKey(c.Request.Context(), actor(c), access.APIKeyInput{Name: f.Name,
		Scopes: strings.Join(scopes, ","), MaxRecipients: f.MaxRecipients, Expires: f.Expires})
	if errs, ok := fieldErrors(c, err); ok {
		h.renderAPIKeys(c, http.StatusUnprocessableEntity, f, errs)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	// The secret is in this response only: no redirect, and no cache may keep it.
	c.Header("Cache-Control", "no-store")
	render(c, http.StatusCreated, views.APIKeyCreatedPage(page(c, tr(c, "title.api_key_created"), "apikeys"), k, secret))
}

// RevokeAPIKey revokes a key; systems using it are refused from then on.
func (h *Handlers) RevokeAPIKey(c *gin.Context) {
	k, ok := h.keyOfPath(c)
	if !ok {
		return
	}
	if err := h.Dispatch.Access().RevokeAPIKey(c.Request.Context(), actor(c), k); err != nil {
		h.failOr(c, err, func(a answer) { h.renderAPIKeys(c, a.Status, views.APIKeyForm{Scopes: map[string]bool{}}, a.errs()) },
			saying(kernel.ErrStateChanged, "users.keys.already_revoked", "Name", k.Name))
		return
	}
	h.redirectNotice(c, "/api-keys", "revoked", tr(c, "users.keys.subject", "Name", k.Name))
}
