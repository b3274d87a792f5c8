package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"herald/alert"
	"herald/audit"
	"herald/incident"
	"herald/kernel"
	"herald/views"
)

// incidents is the incidents' service, acting on alerts through the alerts' service.
func (h *Handlers) incidents() *incident.Coordinator {
	return incident.NewService(h.Store, h.Dispatch.Alerts(), nil)
}

// incidentPageSize is how many incidents the console page and one API answer hold.
const incidentPageSize = 50

// incidentFilter reads ?state= and the page's cursor (?cursor=, an incident id).
func incidentFilter(c *gin.Context) (incident.Filter, error) {
	f := incident.Filter{State: c.Query("state")}
	if cur := c.Query("cursor"); cur != "" {
		id, err := strconv.ParseInt(cur, 10, 64)
		if err != nil || id <= 0 {
			return f, kernel.Invalid("cursor", "api.list.cursor")
		}
		f.BeforeID = id
	}
	return f, nil
}

// listIncidents lists a page of size incidents the request's filter selects, and the
// next page's cursor ("" on the last).
func (h *Handlers) listIncidents(c *gin.Context, size int) ([]incident.Incident, string, error) {
	f, err := incidentFilter(c)
	if err != nil {
		return nil, "", err
	}
	list, err := h.incidents().List(c.Request.Context(), f, size+1)
	if err != nil {
		return nil, "", err
	}
	if len(list) <= size {
		return list, "", nil
	}
	list = list[:size]
	return list, strconv.FormatInt(list[len(list)-1].ID, 10), nil
}

// incidentPage lists a page of incidents, with their alerts, and the next page's
// cursor ("" on the last).
func (h *Handlers) incidentPage(c *gin.Context) ([]views.IncidentRow, string, error) {
	list, next, err := h.listIncidents(c, incidentPageSize)
	if err != nil {
		return nil, "", err
	}
	ctx := c.Request.Context()
	ids := make([]int64, len(list))
	for i := range list {
		ids[i] = list[i].ID
	}
	alerts, err := incident.Of(h.Store).Alerts(ctx, incidentPageSize*maxIncidentAlertRows, ids...)
	if err != nil {
		return nil, "", err
	}
	byIncident := map[int64][]alert.Alert{}
	for _, a := range alerts {
		if len(byIncident[*a.IncidentID]) < maxIncidentAlertRows {
			byIncident[*a.IncidentID] = append(byIncident[*a.IncidentID], a)
		}
	}
	rows := make([]views.IncidentRow, len(list))
	for i, in := range list {
		rows[i] = views.IncidentRow{Incident: in, Alerts: byIncident[in.ID]}
	}
	return rows, next, nil
}

// maxIncidentAlertRows is how many of an incident's alerts the console page folds
// under it.
const maxIncidentAlertRows = 100

// Incidents is the 事件 page: incidents, newest first, their alerts folded under them.
func (h *Handlers) Incidents(c *gin.Context) {
	rows, next, err := h.incidentPage(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	v := views.IncidentsView{Rows: rows, State: c.Query("state"), Next: next, CanAct: canOperate(c), Notice: h.notice(c), Now: time.Now()}
	render(c, http.StatusOK, views.IncidentsPage(page(c, tr(c, "incidents.title"), "alerts"), v))
}

// AcknowledgeIncident takes an incident and its alerts from the console.
func (h *Handlers) AcknowledgeIncident(c *gin.Context) {
	h.consoleMoveIncident(c, h.incidents().Acknowledge, "incidents.acknowledged")
}

// ResolveIncident resolves an incident and its alerts from the console.
func (h *Handlers) ResolveIncident(c *gin.Context) {
	h.consoleMoveIncident(c, h.incidents().Resolve, "incidents.resolved")
}

// incidentMove is Acknowledge or Resolve.
type incidentMove func(ctx context.Context, by audit.Actor, id int64, externalID, via, note string) (incident.Result, error)

func (h *Handlers) consoleMoveIncident(c *gin.Context, move incidentMove, done string) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		ErrorPage(c, http.StatusNotFound, "api.not_found")
		return
	}
	res, err := move(c.Request.Context(), actor(c), id, "", alert.AckViaConsole, c.PostForm("note"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "api.not_found"))
		return
	}
	sentence := tr(c, done, "ID", id)
	if res.Already {
		sentence = tr(c, "incidents.already", "ID", id)
	}
	h.redirectNotice(c, fmt.Sprintf("/incidents#incident-%d", id), "note", sentence)
}

// incidentJSON is an incident as the API shows it; Alerts only in the answer about one.
type incidentJSON struct {
	ID             int64       `json:"id"`
	Source         string      `json:"source"`
	GroupKey       string      `json:"group_key"`
	Title          string      `json:"title"`
	State          string      `json:"state"`
	AlertID        *int64      `json:"alert_id"`
	AlertCount     int         `json:"alert_count"`
	StormThreshold int         `json:"storm_threshold"`
	StormAt        *time.Time  `json:"storm_at"`
	OpenedAt       time.Time   `json:"opened_at"`
	WindowEndsAt   time.Time   `json:"window_ends_at"`
	AcknowledgedBy string      `json:"acknowledged_by"`
	AcknowledgedAt *time.Time  `json:"acknowledged_at"`
	ResolvedBy     string      `json:"resolved_by"`
	ResolvedAt     *time.Time  `json:"resolved_at"`
	Alerts         []alertJSON `json:"alerts,omitempty"`
}

func newIncidentJSON(in *incident.Incident) incidentJSON {
	return incidentJSON{ID: in.ID, Source: in.Source, GroupKey: in.GroupKey, Title: in.Title, State: in.State, AlertID: in.AlertID,
		AlertCount: in.AlertCount, StormThreshold: in.StormThreshold, StormAt: in.StormAt, OpenedAt: in.OpenedAt,
		WindowEndsAt: in.WindowEndsAt, AcknowledgedBy: in.AcknowledgedBy, AcknowledgedAt: in.AcknowledgedAt,
		ResolvedBy: in.ResolvedBy, ResolvedAt: in.ResolvedAt}
}

// APIListIncidents is GET /api/v1/incidents?state=&cursor=: newest first, a page at a
// time (next_cursor continues it; "" on the last page).
func (h *Handlers) APIListIncidents(c *gin.Context) {
	list, next, err := h.listIncidents(c, listPageSize)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := make([]incidentJSON, len(list))
	for i := range list {
		out[i] = newIncidentJSON(&list[i])
	}
	c.JSON(http.StatusOK, gin.H{"incidents": out, "next_cursor": next})
}

// APIGetIncident is GET /api/v1/incidents/:id: the incident and its alerts, the first
// first.
func (h *Handlers) APIGetIncident(c *gin.Context) {
	id, ok := alertID(c)
	if !ok {
		return
	}
	in, alerts, err := h.incidents().Get(c.Request.Context(), id)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, incidentWithAlerts(in, alerts))
}

// incidentWithAlerts is an incident and its alerts as the API shows them.
func incidentWithAlerts(in *incident.Incident, alerts []alert.Alert) incidentJSON {
	out := newIncidentJSON(in)
	out.Alerts = make([]alertJSON, len(alerts))
	for i := range alerts {
		out.Alerts[i] = newAlertJSON(&alerts[i], nil)
	}
	return out
}

// APIAcknowledgeIncident is POST /api/v1/incidents/:id/ack {"by","note"}.
func (h *Handlers) APIAcknowledgeIncident(c *gin.Context) {
	h.apiMoveIncident(c, h.incidents().Acknowledge)
}

// APIResolveIncident is POST /api/v1/incidents/:id/resolve {"by","note"}.
func (h *Handlers) APIResolveIncident(c *gin.Context) {
	h.apiMoveIncident(c, h.incidents().Resolve)
}

func (h *Handlers) apiMoveIncident(c *gin.Context, move incidentMove) {
	id, body, ok := ackRequest(c)
	if !ok {
		return
	}
	res, err := move(c.Request.Context(), actor(c), id, body.By, alert.AckViaAPI, body.Note)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"incident": newIncidentJSON(res.Incident), "already": res.Already})
}
