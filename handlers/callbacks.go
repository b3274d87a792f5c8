package handlers

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/kernel"
	"herald/models"
	"herald/views"
)

// callbackPageSize is how many events the callback page lists at a time.
const callbackPageSize = 50

// keyOfPath reads /api-keys/:id and answers 404 for a key that does not exist.
func (h *Handlers) keyOfPath(c *gin.Context) (*access.APIKey, bool) {
	id, _ := strconv.ParseInt(c.Param("id"), 10, 64)
	k, err := h.Store.Access().APIKeyByID(c.Request.Context(), id)
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_api_key", "ID", c.Param("id")))
		return nil, false
	}
	return k, true
}

// KeyCallback is GET /api-keys/:id/callback: the key's callback and its recent events.
func (h *Handlers) KeyCallback(c *gin.Context) {
	k, ok := h.keyOfPath(c)
	if !ok {
		return
	}
	v := views.KeyCallback{Key: k, Form: views.CallbackForm{URL: k.CallbackURL, AllowPrivate: k.CallbackAllowPrivate}, Notice: h.notice(c)}
	h.renderCallback(c, http.StatusOK, v, nil)
}

func (h *Handlers) renderCallback(c *gin.Context, status int, v views.KeyCallback, errs map[string]string) {
	v.State = c.Query("state")
	switch v.State {
	case "", models.EventPending, models.EventDelivered, models.EventFailed:
	default:
		v.State = ""
	}
	before, _ := strconv.ParseInt(c.Query("before"), 10, 64)
	events, err := h.Store.Outbox().CallbackEventsOf(c.Request.Context(), v.Key.ID, v.State, before, callbackPageSize)
	if err != nil {
		h.fail(c, err)
		return
	}
	v.Events = events
	base := "/api-keys/" + strconv.FormatInt(v.Key.ID, 10) + "/callback?state=" + v.State
	if before > 0 {
		v.First = base
	}
	if events.More {
		v.Next = base + "&before=" + strconv.FormatInt(events.Before, 10)
	}
	if v.NewSecret != "" {
		c.Header("Cache-Control", "no-store")
	}
	render(c, status, views.KeyCallbackPage(page(c, tr(c, "callbacks.title", "Name", v.Key.Name), "apikeys"), v, errs))
}

// SetKeyCallback is POST /api-keys/:id/callback: set, change or (with an empty URL)
// remove the key's callback. A new secret is shown on the answer, once.
func (h *Handlers) SetKeyCallback(c *gin.Context) {
	k, ok := h.keyOfPath(c)
	if !ok {
		return
	}
	set := access.CallbackSetting{URL: c.PostForm("url"), Secret: c.PostForm("secret"), AllowPrivate: c.PostForm("allow_private_network") == "true"}
	v := views.KeyCallback{Key: k, Form: views.CallbackForm{URL: set.URL, AllowPrivate: set.AllowPrivate}}
	if err := h.Dispatch.Access().SetCallback(c.Request.Context(), actor(c), k, &set); err != nil {
		h.failOr(c, err, func(a answer) { h.renderCallback(c, a.Status, v, a.errs()) },
			saying(kernel.ErrStateChanged, "users.keys.already_revoked", "Name", k.Name))
		return
	}
	if set.URL == "" {
		h.redirectNotice(c, "/api-keys/"+c.Param("id")+"/callback", "saved", tr(c, "callbacks.subject", "Name", k.Name))
		return
	}
	k.CallbackURL, k.CallbackAllowPrivate = set.URL, set.AllowPrivate
	v.NewSecret = set.Secret
	v.Notice = tr(c, "notice.saved", "Subject", tr(c, "callbacks.subject", "Name", k.Name))
	h.renderCallback(c, http.StatusOK, v, nil)
}

// ResendKeyEvent is POST /api-keys/:id/events/:event/resend: deliver an event again.
func (h *Handlers) ResendKeyEvent(c *gin.Context) {
	k, ok := h.keyOfPath(c)
	if !ok {
		return
	}
	event := c.Param("event")
	if err := h.Dispatch.Messages().ResendCallbackEvent(c.Request.Context(), actor(c), k, event); err != nil {
		v := views.KeyCallback{Key: k, Form: views.CallbackForm{URL: k.CallbackURL, AllowPrivate: k.CallbackAllowPrivate}}
		h.failOr(c, err, func(a answer) { h.renderCallback(c, a.Status, v, a.errs()) },
			saying(kernel.ErrNotFound, "callbacks.no_event", "ID", event), saying(kernel.ErrStateChanged, "callbacks.already_pending"))
		return
	}
	h.redirectNotice(c, "/api-keys/"+c.Param("id")+"/callback", "resent", tr(c, "callbacks.event_subject", "ID", event))
}
