package handlers

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/inbound"
	"herald/kernel"
	"herald/views"
)

// The console's heartbeats pages, beside the integrations': every change goes through
// the integrations' service (h.Dispatch.Inbound()), as the API's does.

// Heartbeats lists the heartbeats with their last ping, when the next is due and an
// alert a missed ping opened.
func (h *Handlers) Heartbeats(c *gin.Context) {
	list, err := h.Dispatch.Inbound().Heartbeats(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	render(c, http.StatusOK, views.HeartbeatsPage(page(c, tr(c, "heartbeats.console.title"), "alerts"), list, h.notice(c)))
}

// NewHeartbeatForm starts a heartbeat: a daily one, its route to fill in.
func (h *Handlers) NewHeartbeatForm(c *gin.Context) {
	h.renderHeartbeatForm(c, http.StatusOK, views.HeartbeatForm{Interval: "24h", Grace: "10m"}, nil)
}

// EditHeartbeatForm shows a heartbeat's interval, grace, days and route to change.
func (h *Handlers) EditHeartbeatForm(c *gin.Context) {
	hb, err := h.Dispatch.Inbound().Heartbeat(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "heartbeats.console.none"))
		return
	}
	f := views.HeartbeatForm{Original: hb.Name, Name: hb.Name, Interval: views.ShortDuration(hb.Interval()),
		Grace: views.ShortDuration(hb.Grace()), Days: hb.Days, Route: routeFormOf(hb.Route)}
	f.Route.Matchers = nil // a heartbeat's route takes every missed ping
	h.renderHeartbeatForm(c, http.StatusOK, f, nil)
}

// CreateHeartbeat saves a new heartbeat and shows its token, once.
func (h *Handlers) CreateHeartbeat(c *gin.Context) {
	f := heartbeatFormOf(c, "")
	hb, token, err := h.Dispatch.Inbound().CreateHeartbeat(c.Request.Context(), actor(c), heartbeatInputOf(f))
	if err != nil {
		h.heartbeatFormFailed(c, f, err)
		return
	}
	h.showHeartbeatToken(c, http.StatusCreated, hb.Name, token, true)
}

// UpdateHeartbeat saves a heartbeat's changed interval, grace, days and route.
func (h *Handlers) UpdateHeartbeat(c *gin.Context) {
	hb, err := h.Dispatch.Inbound().Heartbeat(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "heartbeats.console.none"))
		return
	}
	f := heartbeatFormOf(c, hb.Name)
	if _, err := h.Dispatch.Inbound().UpdateHeartbeat(c.Request.Context(), actor(c), hb.Name, heartbeatInputOf(f)); err != nil {
		h.heartbeatFormFailed(c, f, err)
		return
	}
	h.redirectNotice(c, "/heartbeats", "saved", hb.Name)
}

// RotateHeartbeatToken gives a heartbeat a new token, shown once; the old one stops
// working at once.
func (h *Handlers) RotateHeartbeatToken(c *gin.Context) {
	name := c.Param("name")
	token, err := h.Dispatch.Inbound().RotateHeartbeatToken(c.Request.Context(), actor(c), name)
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "heartbeats.console.none"))
		return
	}
	h.showHeartbeatToken(c, http.StatusOK, name, token, false)
}

// DeleteHeartbeat removes a heartbeat; an alert it opened stays.
func (h *Handlers) DeleteHeartbeat(c *gin.Context) {
	if err := h.Dispatch.Inbound().DeleteHeartbeat(c.Request.Context(), actor(c), c.Param("name")); err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "heartbeats.console.none"))
		return
	}
	h.redirectNotice(c, "/heartbeats", "deleted", c.Param("name"))
}

// showHeartbeatToken shows a token with the snippets that use it. The token is in this
// response only: no redirect, and no cache may keep it.
func (h *Handlers) showHeartbeatToken(c *gin.Context, status int, name, token string, created bool) {
	c.Header("Cache-Control", "no-store")
	v := views.HeartbeatTokenView{Name: name, PingURL: h.pingURL(name), Token: token, Created: created}
	render(c, status, views.HeartbeatTokenPage(page(c, tr(c, "heartbeats.console.token_title", "Name", name), "alerts"), v))
}

// heartbeatFormOf reads the heartbeat form; original names the heartbeat edited, whose
// name stays.
func heartbeatFormOf(c *gin.Context, original string) views.HeartbeatForm {
	f := views.HeartbeatForm{Original: original, Name: strings.TrimSpace(c.PostForm("name")), Interval: strings.TrimSpace(c.PostForm("interval")),
		Grace: strings.TrimSpace(c.PostForm("grace")), Days: strings.TrimSpace(c.PostForm("days")), Route: routeFormFrom(c, "route")}
	if original != "" {
		f.Name = original
	}
	return f
}

func heartbeatInputOf(f views.HeartbeatForm) inbound.HeartbeatInput {
	route, _ := routeOf(f.Route)
	// Carried through the form as the API set them (the form does not show them).
	route.Rules, _ = rulesOf("route", f.Route.Noise)
	return inbound.HeartbeatInput{Name: f.Name, Interval: f.Interval, Grace: f.Grace, Days: f.Days, Route: route}
}

// heartbeatFormFields are the fields the heartbeat form shows an error beside; any
// other error is shown above it.
var heartbeatFormFields = regexp.MustCompile(`^(name|interval|grace|days|route\.(policy|template|account|platform|priority|recipients))$`)

// heartbeatFormFailed shows the form again with err beside its field (a route's one
// recipient by its recipients field), or on the error page when it is no refusal.
func (h *Handlers) heartbeatFormFailed(c *gin.Context, f views.HeartbeatForm, err error) {
	h.failOr(c, err, func(a answer) {
		field, _, _ := strings.Cut(a.Field, ".recipients[")
		if field != a.Field {
			field += ".recipients"
		}
		if !heartbeatFormFields.MatchString(field) {
			field = ""
		}
		h.renderHeartbeatForm(c, a.Status, f, map[string]string{field: a.Message})
	}, saying(kernel.ErrNotFound, "heartbeats.console.none"))
}

// renderHeartbeatForm shows the form with what its route's selects offer.
func (h *Handlers) renderHeartbeatForm(c *gin.Context, status int, f views.HeartbeatForm, errs map[string]string) {
	choices, err := h.routeChoices(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	title := tr(c, "heartbeats.console.new")
	if f.Original != "" {
		title = tr(c, "heartbeats.console.edit_title", "Name", f.Original)
	}
	render(c, status, views.HeartbeatFormPage(page(c, title, "alerts"), f, choices, errs))
}
