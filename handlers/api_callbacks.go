package handlers

import (
	"herald/access"
	"net/http"

	"github.com/gin-gonic/gin"
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
	k, err := h.Store.Access().LiveAPIKeyByName(ctx, c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	set := access.CallbackSetting{URL: in.URL, Secret: in.Secret, AllowPrivate: in.AllowPrivateNetwork}
	if err := h.Dispatch.Access().SetCallback(ctx, actor(c), k, &set); err != nil {
		h.apiFail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, callbackAnswer{Name: k.Name, callbackJSON: callbackJSON{URL: set.URL, Secret: set.Secret, AllowPrivateNetwork: set.AllowPrivate}})
}
