package handlers

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"herald/inbound"
)

// integrationBody is what POST and PUT /api/v1/integrations read, and the part of an
// integration the API shows back.
type integrationBody struct {
	Name            string                       `json:"name"`
	Format          string                       `json:"format"`
	Routes          []inbound.Route              `json:"routes"`
	DefaultRoute    *inbound.Route               `json:"default_route"`
	NotifyOnResolve bool                         `json:"notify_on_resolve"`
	Language        string                       `json:"language"`
	Mapping         map[string]string            `json:"mapping,omitempty"`
	ValueMap        map[string]map[string]string `json:"value_map,omitempty"`
}

// IntegrationJSON is an integration as the API shows it: never its token but in the
// answer that makes one.
type IntegrationJSON struct {
	integrationBody
	PushURL     string     `json:"push_url"`
	CreatedBy   string     `json:"created_by"`
	CreatedAt   time.Time  `json:"created_at"`
	LastEventAt *time.Time `json:"last_event_at"`
	// Token is the integration's token, in the answers that make one only.
	Token string `json:"token,omitempty"`
}

func (b integrationBody) input() inbound.IntegrationInput {
	return inbound.IntegrationInput{Name: b.Name, Format: b.Format, Routes: b.Routes, DefaultRoute: b.DefaultRoute,
		NotifyOnResolve: b.NotifyOnResolve, Language: b.Language, Mapping: b.Mapping, ValueMap: b.ValueMap}
}

// pushURL is where an integration's tool posts its events.
func (h *Handlers) pushURL(name string) string {
	return strings.TrimSuffix(h.PublicURL, "/") + "/api/v1/inbound/" + url.PathEscape(name)
}

func (h *Handlers) integrationJSON(it *inbound.Integration) IntegrationJSON {
	routes := []inbound.Route(it.Routes)
	if routes == nil {
		routes = []inbound.Route{}
	}
	body := integrationBody{Name: it.Name, Format: it.Format, Routes: routes, DefaultRoute: it.DefaultRoute,
		NotifyOnResolve: it.NotifyOnResolve, Language: it.Language, Mapping: it.MappingFields, ValueMap: it.ValueMap}
	return IntegrationJSON{integrationBody: body, PushURL: h.pushURL(it.Name), CreatedBy: it.CreatedBy,
		CreatedAt: it.CreatedAt.UTC(), LastEventAt: it.LastEventAt}
}

// APIListIntegrations is GET /api/v1/integrations.
func (h *Handlers) APIListIntegrations(c *gin.Context) {
	list, err := h.Dispatch.Inbound().Integrations(c.Request.Context())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := make([]IntegrationJSON, len(list))
	for i := range list {
		out[i] = h.integrationJSON(&list[i])
	}
	c.JSON(http.StatusOK, out)
}

// APIGetIntegration is GET /api/v1/integrations/:name.
func (h *Handlers) APIGetIntegration(c *gin.Context) {
	it, err := h.Dispatch.Inbound().Integration(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, h.integrationJSON(it))
}

// APICreateIntegration is POST /api/v1/integrations: the answer carries the token, this
// once.
func (h *Handlers) APICreateIntegration(c *gin.Context) {
	var body integrationBody
	if !decodeJSON(c, &body) {
		return
	}
	it, token, err := h.Dispatch.Inbound().CreateIntegration(c.Request.Context(), actor(c), body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := h.integrationJSON(it)
	out.Token = token
	c.JSON(http.StatusCreated, out)
}

// APIUpdateIntegration is PUT /api/v1/integrations/:name: its routes and settings; the
// name, format and token stay.
func (h *Handlers) APIUpdateIntegration(c *gin.Context) {
	var body integrationBody
	if !decodeJSON(c, &body) {
		return
	}
	it, err := h.Dispatch.Inbound().UpdateIntegration(c.Request.Context(), actor(c), c.Param("name"), body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, h.integrationJSON(it))
}

// APIRotateIntegrationToken is POST /api/v1/integrations/:name/token: a new token, shown
// this once; the old one stops working.
func (h *Handlers) APIRotateIntegrationToken(c *gin.Context) {
	token, err := h.Dispatch.Inbound().RotateToken(c.Request.Context(), actor(c), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"token": token, "push_url": h.pushURL(c.Param("name"))})
}

// APIDeleteIntegration is DELETE /api/v1/integrations/:name.
func (h *Handlers) APIDeleteIntegration(c *gin.Context) {
	if err := h.Dispatch.Inbound().DeleteIntegration(c.Request.Context(), actor(c), c.Param("name")); err != nil {
		h.apiFail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// InboundEventJSON is one event an integration received, and what became of it.
type InboundEventJSON struct {
	ID         int64     `json:"id"`
	ReceivedAt time.Time `json:"received_at"`
	Outcome    string    `json:"outcome"`
	Reason     string    `json:"reason,omitempty"`
	DedupKey   string    `json:"dedup_key,omitempty"`
	AlertID    *int64    `json:"alert_id"`
	Body       string    `json:"body,omitempty"`
}

func inboundEventsJSON(list []inbound.Received) []InboundEventJSON {
	out := make([]InboundEventJSON, len(list))
	for i, e := range list {
		out[i] = InboundEventJSON{ID: e.ID, ReceivedAt: e.ReceivedAt.UTC(), Outcome: e.Outcome, Reason: e.Reason,
			DedupKey: e.DedupKey, AlertID: e.AlertID, Body: e.Body}
	}
	return out
}

// APIIntegrationEvents is GET /api/v1/integrations/:name/events: the newest events it
// received, with what became of each and the start of its body.
func (h *Handlers) APIIntegrationEvents(c *gin.Context) {
	list, err := h.Dispatch.Inbound().Events(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, inboundEventsJSON(list))
}

// Inbound is POST /api/v1/inbound/:name, where a monitoring tool posts its events. The
// integration's token goes in Authorization: Bearer, or, for a tool that cannot set
// headers, in ?token= (the request log never records a query). A wrong or missing token
// is 401 and nothing is recorded; a body over MaxBodyBytes 413; a body that cannot be
// read 422 naming the field, recorded as refused.
func (h *Handlers) Inbound(c *gin.Context) {
	svc := h.Dispatch.Inbound()
	it, err := svc.Authenticate(c.Request.Context(), c.Param("name"), sourceToken(c))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxBodyBytes))
	if _, over := errors.AsType[*http.MaxBytesError](err); over {
		APIError(c, http.StatusRequestEntityTooLarge, "body_too_large", tr(c, "api.body_too_large", "Max", MaxBodyBytes), "")
		return
	}
	if err != nil {
		APIError(c, http.StatusBadRequest, "invalid_json", tr(c, "api.body_unreadable"), "")
		return
	}
	recs, err := svc.Receive(c.Request.Context(), it, body)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	for i := range recs {
		recs[i].Body = ""
	}
	c.JSON(http.StatusOK, gin.H{"events": inboundEventsJSON(recs)})
}

// HeartbeatJSON is a heartbeat as the API shows it: never its token but in the answer
// that makes one.
type HeartbeatJSON struct {
	Name       string        `json:"name"`
	Interval   string        `json:"interval"`
	Grace      string        `json:"grace"`
	Days       string        `json:"days"`
	Route      inbound.Route `json:"route"`
	PingURL    string        `json:"ping_url"`
	LastPingAt *time.Time    `json:"last_ping_at"`
	DueAt      time.Time     `json:"due_at"`
	AlertID    *int64        `json:"alert_id"`
	Token      string        `json:"token,omitempty"`
}

// heartbeatBody is what POST and PUT /api/v1/heartbeats read.
type heartbeatBody struct {
	Name     string        `json:"name"`
	Interval string        `json:"interval"`
	Grace    string        `json:"grace"`
	Days     string        `json:"days"`
	Route    inbound.Route `json:"route"`
}

func (b heartbeatBody) input() inbound.HeartbeatInput {
	return inbound.HeartbeatInput{Name: b.Name, Interval: b.Interval, Grace: b.Grace, Days: b.Days, Route: b.Route}
}

// pingURL is where a heartbeat's job pings.
func (h *Handlers) pingURL(name string) string {
	return strings.TrimSuffix(h.PublicURL, "/") + "/api/v1/heartbeats/" + url.PathEscape(name) + "/ping"
}

func (h *Handlers) heartbeatJSON(hb *inbound.Heartbeat) HeartbeatJSON {
	return HeartbeatJSON{Name: hb.Name, Interval: hb.Interval().String(), Grace: hb.Grace().String(), Days: hb.Days,
		Route: hb.Route, PingURL: h.pingURL(hb.Name), LastPingAt: hb.LastPingAt, DueAt: hb.DueAt.UTC(), AlertID: hb.AlertID}
}

// APIListHeartbeats is GET /api/v1/heartbeats.
func (h *Handlers) APIListHeartbeats(c *gin.Context) {
	list, err := h.Dispatch.Inbound().Heartbeats(c.Request.Context())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := make([]HeartbeatJSON, len(list))
	for i := range list {
		out[i] = h.heartbeatJSON(&list[i])
	}
	c.JSON(http.StatusOK, out)
}

// APIGetHeartbeat is GET /api/v1/heartbeats/:name.
func (h *Handlers) APIGetHeartbeat(c *gin.Context) {
	hb, err := h.Dispatch.Inbound().Heartbeat(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, h.heartbeatJSON(hb))
}

// APICreateHeartbeat is POST /api/v1/heartbeats: the answer carries the token, this once.
func (h *Handlers) APICreateHeartbeat(c *gin.Context) {
	var body heartbeatBody
	if !decodeJSON(c, &body) {
		return
	}
	hb, token, err := h.Dispatch.Inbound().CreateHeartbeat(c.Request.Context(), actor(c), body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := h.heartbeatJSON(hb)
	out.Token = token
	c.JSON(http.StatusCreated, out)
}

// APIUpdateHeartbeat is PUT /api/v1/heartbeats/:name: its interval, grace, days and
// route; the name and token stay.
func (h *Handlers) APIUpdateHeartbeat(c *gin.Context) {
	var body heartbeatBody
	if !decodeJSON(c, &body) {
		return
	}
	hb, err := h.Dispatch.Inbound().UpdateHeartbeat(c.Request.Context(), actor(c), c.Param("name"), body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, h.heartbeatJSON(hb))
}

// APIRotateHeartbeatToken is POST /api/v1/heartbeats/:name/token: a new token, shown
// this once; the old one stops working.
func (h *Handlers) APIRotateHeartbeatToken(c *gin.Context) {
	token, err := h.Dispatch.Inbound().RotateHeartbeatToken(c.Request.Context(), actor(c), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"token": token, "ping_url": h.pingURL(c.Param("name"))})
}

// APIDeleteHeartbeat is DELETE /api/v1/heartbeats/:name.
func (h *Handlers) APIDeleteHeartbeat(c *gin.Context) {
	if err := h.Dispatch.Inbound().DeleteHeartbeat(c.Request.Context(), actor(c), c.Param("name")); err != nil {
		h.apiFail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// Ping is GET or POST /api/v1/heartbeats/:name/ping, with the heartbeat's token in
// Authorization: Bearer or ?token= (a cron line's curl, Alertmanager's Watchdog).
func (h *Handlers) Ping(c *gin.Context) {
	hb, err := h.Dispatch.Inbound().Ping(c.Request.Context(), c.Param("name"), sourceToken(c))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, h.heartbeatJSON(hb))
}

// sourceToken is the token a monitoring tool or a job presents: in Authorization:
// Bearer, or for a tool that cannot set headers in ?token= (never logged: the request
// log records no query).
func sourceToken(c *gin.Context) string {
	if auth := c.GetHeader("Authorization"); strings.HasPrefix(auth, "Bearer ") {
		return strings.TrimPrefix(auth, "Bearer ")
	}
	return c.Query("token")
}
