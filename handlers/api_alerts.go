package handlers

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"herald/alert"
	"herald/audit"
	"herald/inhibit"
)

// alertStepJSON is one step of an alert as the API shows it.
type alertStepJSON struct {
	N             int        `json:"n"`
	Round         int        `json:"round"`
	DueAt         time.Time  `json:"due_at"`
	FiredAt       *time.Time `json:"fired_at"`
	Targets       []string   `json:"targets"`
	SkippedReason string     `json:"skipped_reason"`
}

// alertJSON is an alert as the API shows it. Repeat is the round the escalation is in,
// from 0 (the chain's first run).
type alertJSON struct {
	ID             int64           `json:"id"`
	BatchID        string          `json:"batch_id"`
	Policy         string          `json:"policy"`
	State          string          `json:"state"`
	Step           int             `json:"step"`
	Repeat         int             `json:"repeat"`
	OpenedAt       time.Time       `json:"opened_at"`
	AcknowledgedBy string          `json:"acknowledged_by"`
	AcknowledgedAt *time.Time      `json:"acknowledged_at"`
	ResolvedBy     string          `json:"resolved_by"`
	ResolvedAt     *time.Time      `json:"resolved_at"`
	Steps          []alertStepJSON `json:"steps"`
	// An alert a monitoring tool posted: the integration, its dedup key, labels and
	// severity, and its events.
	Source      string            `json:"source,omitempty"`
	DedupKey    string            `json:"dedup_key,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Severity    string            `json:"severity,omitempty"`
	EventCount  int               `json:"event_count,omitempty"`
	LastEventAt *time.Time        `json:"last_event_at,omitempty"`
	// IncidentID is the incident it belongs to; Flapping: its key flaps, it sends
	// nothing of its own.
	IncidentID *int64 `json:"incident_id,omitempty"`
	Flapping   bool   `json:"flapping,omitempty"`
	// Inhibited: another alert mutes it now; Inhibition says, of an alert opened
	// inhibited, by which rule and alert, and whether it still is.
	Inhibited  bool                 `json:"inhibited,omitempty"`
	Inhibition *alertInhibitionJSON `json:"inhibition,omitempty"`
}

// alertInhibitionJSON is an alert's inhibition as the API shows it.
type alertInhibitionJSON struct {
	Rule          string     `json:"rule"`
	SourceAlertID int64      `json:"source_alert_id"`
	State         string     `json:"state"`
	InhibitedAt   time.Time  `json:"inhibited_at"`
	ReleasedAt    *time.Time `json:"released_at"`
}

// withInhibitions adds to each alert its inhibition, where it was opened inhibited.
func (h *Handlers) withInhibitions(ctx context.Context, out []alertJSON) error {
	ids := make([]int64, len(out))
	for i := range out {
		ids[i] = out[i].ID
	}
	found, err := inhibit.Of(h.Store).Inhibitions(ctx, ids)
	if err != nil {
		return err
	}
	for i := range out {
		if in, ok := found[out[i].ID]; ok {
			out[i].Inhibition = &alertInhibitionJSON{Rule: in.RuleName, SourceAlertID: in.SourceAlertID, State: in.State,
				InhibitedAt: in.InhibitedAt, ReleasedAt: in.ReleasedAt}
			out[i].Inhibited = in.State == inhibit.StateInhibited
		}
	}
	return nil
}

func newAlertJSON(a *alert.Alert, steps []alert.AlertStep) alertJSON {
	out := alertJSON{ID: a.ID, BatchID: a.BatchID, Policy: a.Policy, State: a.State, Step: a.Step, Repeat: max(a.Round-1, 0),
		OpenedAt: a.OpenedAt, AcknowledgedBy: a.AcknowledgedBy, AcknowledgedAt: a.AcknowledgedAt, ResolvedBy: a.ResolvedBy,
		ResolvedAt: a.ResolvedAt, Steps: []alertStepJSON{}, Source: a.Source, DedupKey: a.DedupKey, Labels: a.Labels,
		Severity: a.Severity, EventCount: a.EventCount, LastEventAt: a.LastEventAt, IncidentID: a.IncidentID, Flapping: a.Flapping}
	for _, s := range steps {
		if s.CancelledAt != nil {
			continue
		}
		targets := []string(s.Targets)
		if targets == nil {
			targets = []string{}
		}
		out.Steps = append(out.Steps, alertStepJSON{N: s.N, Round: s.Round, DueAt: s.DueAt, FiredAt: s.FiredAt, Targets: targets,
			SkippedReason: s.SkippedReason})
	}
	return out
}

// alertID reads the :id of an alert route; false after answering 404.
func alertID(c *gin.Context) (int64, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		APIError(c, http.StatusNotFound, "not_found", tr(c, "api.not_found"), "")
		return 0, false
	}
	return id, true
}

// APIGetAlert is GET /api/v1/alerts/:id; another key's alert is 404 to a send or read
// key, as its messages are.
func (h *Handlers) APIGetAlert(c *gin.Context) {
	id, ok := alertID(c)
	if !ok {
		return
	}
	a, steps, err := h.Dispatch.Alerts().Alert(c.Request.Context(), actor(c), id)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := []alertJSON{newAlertJSON(a, steps)}
	if err := h.withInhibitions(c.Request.Context(), out); err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, out[0])
}

// maxAlertList is how many alerts one list answer holds.
const maxAlertList = 200

// APIListAlerts is GET /api/v1/alerts?state=open: open alerts first, then the newest. A
// send or read key lists the alerts of its own batches only.
func (h *Handlers) APIListAlerts(c *gin.Context) {
	ctx := c.Request.Context()
	list, err := h.Dispatch.Alerts().Alerts(ctx, actor(c), alert.AlertFilter{State: c.Query("state"), Source: c.Query("source"),
		DedupKey: c.Query("dedup_key"), Severity: c.Query("severity"), Label: c.Query("label")}, maxAlertList)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	ids := make([]int64, len(list))
	for i := range list {
		ids[i] = list[i].ID
	}
	steps, err := alert.Of(h.Store).AlertSteps(ctx, ids...)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	byAlert := map[int64][]alert.AlertStep{}
	for _, s := range steps {
		byAlert[s.AlertID] = append(byAlert[s.AlertID], s)
	}
	out := make([]alertJSON, len(list))
	for i := range list {
		out[i] = newAlertJSON(&list[i], alert.PolicySteps(&list[i], byAlert[list[i].ID]))
	}
	if err := h.withInhibitions(ctx, out); err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"alerts": out})
}

// ackBody is the body of an acknowledgment or resolution through the API.
type ackBody struct {
	By   string `json:"by"`
	Note string `json:"note"`
}

// APIAcknowledgeAlert is POST /api/v1/alerts/:id/ack {"by","note"}.
func (h *Handlers) APIAcknowledgeAlert(c *gin.Context) {
	h.apiMoveAlert(c, h.Dispatch.Alerts().AcknowledgeAlert)
}

// APIResolveAlert is POST /api/v1/alerts/:id/resolve {"by","note"}.
func (h *Handlers) APIResolveAlert(c *gin.Context) {
	h.apiMoveAlert(c, h.Dispatch.Alerts().ResolveAlert)
}

// alertMove is AcknowledgeAlert or ResolveAlert.
type alertMove func(ctx context.Context, by audit.Actor, alertID int64, externalID, via, note string) (alert.AckResult, error)

// ackRequest reads the :id and the body of an acknowledgment or resolution through the
// API; false after answering.
func ackRequest(c *gin.Context) (int64, ackBody, bool) {
	var body ackBody
	id, ok := alertID(c)
	return id, body, ok && decodeJSON(c, &body)
}

func (h *Handlers) apiMoveAlert(c *gin.Context, move alertMove) {
	id, body, ok := ackRequest(c)
	if !ok {
		return
	}
	res, err := move(c.Request.Context(), actor(c), id, body.By, alert.AckViaAPI, body.Note)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	steps, err := alert.Of(h.Store).AlertSteps(c.Request.Context(), id)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := gin.H{"alert": newAlertJSON(res.Alert, alert.PolicySteps(res.Alert, steps)), "already": res.Already}
	c.JSON(http.StatusOK, out)
}

// APIListPolicies is GET /api/v1/escalation-policies.
func (h *Handlers) APIListPolicies(c *gin.Context) {
	list, err := h.Dispatch.Alerts().Policies(c.Request.Context())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	if list == nil {
		list = []alert.EscalationPolicy{}
	}
	c.JSON(http.StatusOK, list)
}

// APIGetPolicy is GET /api/v1/escalation-policies/:name.
func (h *Handlers) APIGetPolicy(c *gin.Context) {
	p, err := alert.Of(h.Store).PolicyByName(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

// APICreatePolicy is POST /api/v1/escalation-policies.
func (h *Handlers) APICreatePolicy(c *gin.Context) {
	var body alert.EscalationPolicy
	if !decodeJSON(c, &body) {
		return
	}
	p, err := h.Dispatch.Alerts().CreatePolicy(c.Request.Context(), actor(c), body)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusCreated, p)
}

// APIUpdatePolicy is PUT /api/v1/escalation-policies/:name: replaces the policy, which
// may rename it. Alerts already open keep their copy.
func (h *Handlers) APIUpdatePolicy(c *gin.Context) {
	var body alert.EscalationPolicy
	if !decodeJSON(c, &body) {
		return
	}
	p, err := h.Dispatch.Alerts().UpdatePolicy(c.Request.Context(), actor(c), c.Param("name"), body)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, p)
}

// APIDeletePolicy is DELETE /api/v1/escalation-policies/:name.
func (h *Handlers) APIDeletePolicy(c *gin.Context) {
	if err := h.Dispatch.Alerts().DeletePolicy(c.Request.Context(), actor(c), c.Param("name")); err != nil {
		h.apiFail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
