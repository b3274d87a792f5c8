package handlers

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"herald/dispatch"
	"herald/models"
)

type callbackJSON struct {
	URL                 string `json:"url"`
	Secret              string `json:"secret"`
	AllowPrivateNetwork bool   `json:"allow_private_network"`
}

type callbackAnswer struct {
	Name string `json:"name"`
	callbackJSON
}

// APIPutCallback is PUT /api/v1/api-keys/:name/callback (admin): set the key's callback
// URL and signing secret (an empty secret: Herald makes one), or remove the callback
// with an empty URL. The answer shows the secret in force, once.
func (h *Handlers) APIPutCallback(c *gin.Context) {
	var in callbackJSON
	if !decodeJSON(c, &in) {
		return
	}
	ctx := c.Request.Context()
	k, err := h.Store.LiveAPIKeyByName(ctx, c.Param("name"))
	if errors.Is(err, models.ErrAmbiguous) {
		APIError(c, http.StatusConflict, "ambiguous", tr(c, "callbacks.api_ambiguous", "Name", c.Param("name")), "name")
		return
	}
	if err != nil {
		h.apiFail(c, err)
		return
	}
	set := models.CallbackSetting{URL: in.URL, Secret: in.Secret, AllowPrivate: in.AllowPrivateNetwork}
	if err := h.setCallback(c, k, &set, apiActor(c)); err != nil {
		h.apiFail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, callbackAnswer{Name: k.Name, callbackJSON: callbackJSON{URL: set.URL, Secret: set.Secret, AllowPrivateNetwork: set.AllowPrivate}})
}

// setCallback checks and stores a key's callback with its audit entry: the console and
// the API both set callbacks through it.
func (h *Handlers) setCallback(c *gin.Context, k *models.APIKey, set *models.CallbackSetting, audit models.AuditEntry) error {
	if err := dispatch.CheckCallback(*set); err != nil {
		return err
	}
	audit.Action, audit.TargetType, audit.TargetID = "apikey.callback.set", "api_key", k.Name
	after := *k
	after.CallbackURL, after.CallbackAllowPrivate = set.URL, set.AllowPrivate
	audit.Detail = "hk_" + k.Prefix + after.CallbackDetail()
	if set.URL == "" {
		audit.Action = "apikey.callback.remove"
	}
	return h.Store.SetCallback(c.Request.Context(), k.ID, set, audit)
}
