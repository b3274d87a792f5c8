package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/alert"
	"herald/inhibit"
	"herald/kernel"
	"herald/views"
)

// maxAlertRows is how many alerts the 待确认 page shows.
const maxAlertRows = 100

// alertRows builds the rows of alerts: who each called so far (by name), when its next
// step fires, and why a step called nobody.
func (h *Handlers) alertRows(c *gin.Context, list []alert.Alert) ([]views.AlertRow, map[int64][]alert.AlertStep, error) {
	ctx := c.Request.Context()
	ids := make([]int64, len(list))
	for i := range list {
		ids[i] = list[i].ID
	}
	steps, err := alert.Of(h.Store).AlertSteps(ctx, ids...)
	if err != nil {
		return nil, nil, err
	}
	byAlert := map[int64][]alert.AlertStep{}
	var called []string
	for _, s := range steps {
		byAlert[s.AlertID] = append(byAlert[s.AlertID], s)
		called = append(called, s.Targets...)
	}
	people, err := h.Store.Directory().CachedRecipientsByExternalIDs(ctx, called)
	if err != nil {
		return nil, nil, err
	}
	names := map[string]string{}
	for _, p := range people {
		names[p.ExternalID] = views.PersonName(ctx, p.Name, p.ExternalID)
	}
	inhibitions, err := inhibit.Of(h.Store).Inhibitions(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]views.AlertRow, len(list))
	for i, a := range list {
		rows[i].Alert = a
		if in, ok := inhibitions[a.ID]; ok {
			rows[i].Inhibition = &in
		}
		// An escalating alert has no step only while its batch awaits approval, or while
		// another alert inhibits it, or while it is quiet in an incident or flapping.
		rows[i].Held = a.Escalating() && len(byAlert[a.ID]) == 0 && a.IncidentID == nil && !a.Flapping && !rows[i].Inhibited()
		seen := map[string]bool{}
		for _, s := range byAlert[a.ID] {
			if s.FiredAt == nil && s.CancelledAt == nil && a.Escalating() {
				due := s.DueAt
				rows[i].NextDue = &due
			}
			if s.SkippedReason != "" {
				rows[i].Warnings = append(rows[i].Warnings, s.SkippedReason)
			}
			for _, t := range s.Targets {
				if !seen[t] {
					seen[t] = true
					rows[i].Called = append(rows[i].Called, cmpOr(names[t], t))
				}
			}
		}
	}
	return rows, byAlert, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// alertsView gathers the 待确认 page.
func (h *Handlers) alertsView(c *gin.Context) (views.AlertsView, error) {
	ctx := c.Request.Context()
	v := views.AlertsView{Now: time.Now(), CanAct: canOperate(c)}
	list, err := h.Dispatch.Alerts().Alerts(ctx, actor(c), alert.AlertFilter{}, maxAlertRows)
	if err != nil {
		return v, err
	}
	if v.Rows, _, err = h.alertRows(c, list); err != nil {
		return v, err
	}
	v.Counts, err = alert.Of(h.Store).AlertCounts(ctx)
	return v, err
}

// canOperate reports whether the signed-in user may act (operator or admin).
func canOperate(c *gin.Context) bool {
	u := CurrentUser(c)
	return u != nil && u.Role.Allows(access.RoleOperator)
}

// Alerts is the 待确认 page: alerts waiting for someone, open ones first.
func (h *Handlers) Alerts(c *gin.Context) {
	v, err := h.alertsView(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	v.Notice = h.notice(c)
	render(c, http.StatusOK, views.AlertsPage(page(c, tr(c, "alerts.title"), "alerts"), v))
}

// AlertsLive renders the self-refreshing part of the 待确认 page (an htmx partial).
func (h *Handlers) AlertsLive(c *gin.Context) {
	v, err := h.alertsView(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	render(c, http.StatusOK, views.AlertsLive(v))
}

// Alert is one alert's page.
func (h *Handlers) Alert(c *gin.Context) {
	h.renderAlert(c, http.StatusOK, h.notice(c), nil)
}

func (h *Handlers) renderAlert(c *gin.Context, status int, notice string, errs map[string]string) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	var a *alert.Alert
	if err == nil {
		a, err = alert.Of(h.Store).AlertByID(c.Request.Context(), id)
	}
	if errors.Is(err, strconv.ErrSyntax) || errors.Is(err, strconv.ErrRange) {
		ErrorPage(c, http.StatusNotFound, "alerts.no_alert")
		return
	}
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "alerts.no_alert"))
		return
	}
	rows, steps, err := h.alertRows(c, []alert.Alert{*a})
	if err != nil {
		h.fail(c, err)
		return
	}
	v := views.AlertView{Row: rows[0], Steps: alert.PolicySteps(a, steps[a.ID]), Now: time.Now(), CanAct: canOperate(c),
		Notice: notice, Errs: errs, AcknowledgedBy: h.personLabel(c, a.AcknowledgedBy), ResolvedBy: h.personLabel(c, a.ResolvedBy)}
	if err := h.alertCalls(c, &v); err != nil {
		h.fail(c, err)
		return
	}
	if a.DedupKey != "" {
		since := a.OpenedAt.Add(-alertHistorySpan)
		if v.History, err = alert.Of(h.Store).KeyHistory(c.Request.Context(), a.Source, a.DedupKey, since, maxAlertHistory); err != nil {
			h.fail(c, err)
			return
		}
	}
	if err := h.alertTimeline(c, &v, steps[a.ID]); err != nil {
		h.fail(c, err)
		return
	}
	if _, err := h.Store.BatchByID(c.Request.Context(), a.BatchID); errors.Is(err, kernel.ErrNotFound) {
		v.NoBatch = true
	} else if err != nil {
		h.fail(c, err)
		return
	}
	var called []string
	for _, s := range v.Steps {
		called = append(called, s.Targets...)
	}
	if v.People, err = h.peopleNames(c, called); err != nil {
		h.fail(c, err)
		return
	}
	render(c, status, views.AlertPage(page(c, tr(c, "alerts.alert_title", "ID", a.ID), "alerts"), v))
}

// An alert's page shows the alerts of its dedup key that opened in the day before it,
// at most maxAlertHistory: how often it opened and recovered.
const (
	alertHistorySpan = 24 * time.Hour
	maxAlertHistory  = 20
)

// personLabel names who acted on an alert as the console shows people: a person by
// name and external id, anyone else (a user, an integration) as recorded.
func (h *Handlers) personLabel(c *gin.Context, id string) string {
	if id == "" {
		return ""
	}
	if p, ok := h.person(c, id); ok {
		return views.PersonName(c.Request.Context(), p.Name, p.ExternalID)
	}
	return id
}

// AcknowledgeAlert takes an alert from the console, as the signed-in user.
func (h *Handlers) AcknowledgeAlert(c *gin.Context) {
	h.consoleMoveAlert(c, h.Dispatch.Alerts().AcknowledgeAlert, "alerts.done.acknowledged")
}

// ResolveAlert closes an alert from the console.
func (h *Handlers) ResolveAlert(c *gin.Context) {
	h.consoleMoveAlert(c, h.Dispatch.Alerts().ResolveAlert, "alerts.done.resolved")
}

func (h *Handlers) consoleMoveAlert(c *gin.Context, move alertMove, done string) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		ErrorPage(c, http.StatusNotFound, "alerts.no_alert")
		return
	}
	res, err := move(c.Request.Context(), actor(c), id, "", alert.AckViaConsole, c.PostForm("note"))
	if err != nil {
		h.failOr(c, err, func(a answer) { h.renderAlert(c, a.Status, "", a.errs()) }, saying(kernel.ErrNotFound, "alerts.no_alert"))
		return
	}
	sentence := tr(c, done, "ID", id)
	switch {
	case res.Already && res.Alert.State == alert.AlertResolved:
		sentence = tr(c, "alerts.done.already_resolved", "ID", id, "By", h.ackerName(c, res.Alert.ResolvedBy))
	case res.Already:
		sentence = tr(c, "alerts.done.already", "ID", id, "By", h.ackerName(c, res.Alert.AcknowledgedBy))
	}
	h.redirectNotice(c, fmt.Sprintf("/alerts/%d", id), "note", sentence)
}

// Policies lists the escalation policies.
func (h *Handlers) Policies(c *gin.Context) {
	list, err := h.Dispatch.Alerts().Policies(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	var ids []string
	for _, p := range list {
		for _, s := range p.Steps {
			ids = append(ids, s.Targets...)
		}
	}
	people, err := h.peopleNames(c, ids)
	if err != nil {
		h.fail(c, err)
		return
	}
	render(c, http.StatusOK, views.PoliciesPage(page(c, tr(c, "alerts.policies.title"), "alerts"), list, people, h.notice(c)))
}

// invalidRepeat is the policy form's refusal of a repeat that is not a number.
func invalidRepeat() error {
	return kernel.Invalid("repeat", "alerts.invalid.repeat", "Max", alert.MaxPolicyRepeat)
}

// policyFormErrors places a policy's validation error beside its form field: a step's
// problem beside its step (steps[i]).
func policyFormErrors(c *gin.Context, err error) (map[string]string, bool) {
	var fe *kernel.FieldError
	if !errors.As(err, &fe) {
		return nil, false
	}
	msg := fe.In(c.Request.Context())
	var step int
	if _, scanErr := fmt.Sscanf(fe.Field, "steps[%d]", &step); scanErr == nil {
		return map[string]string{fmt.Sprintf("steps[%d]", step): msg}, true
	}
	return map[string]string{fe.Field: msg}, true
}

func (h *Handlers) renderPolicyForm(c *gin.Context, status int, f views.PolicyForm, errs map[string]string) {
	if err := h.fillPolicyForm(c, &f); err != nil {
		h.fail(c, err)
		return
	}
	title := tr(c, "alerts.policies.new")
	if f.Original != "" {
		title = tr(c, "alerts.policies.edit_title", "Name", f.Original)
	}
	render(c, status, views.PolicyFormPage(page(c, title, "alerts"), f, errs))
}

// NewPolicyForm starts a policy: the people on duty, then the duty manager.
func (h *Handlers) NewPolicyForm(c *gin.Context) {
	h.renderPolicyForm(c, http.StatusOK, views.PolicyForm{Steps: []views.PolicyStepForm{{Targets: []string{alert.TargetOnDuty}, Wait: "10m"}},
		Repeat: "1", NotifyOnAck: true}, nil)
}

// CreatePolicy saves a new policy.
func (h *Handlers) CreatePolicy(c *gin.Context) {
	f := policyFormOf(c, "")
	p, err := policyOf(f)
	var saved *alert.EscalationPolicy
	if err == nil {
		saved, err = h.Dispatch.Alerts().CreatePolicy(c.Request.Context(), actor(c), p)
	}
	h.afterPolicySave(c, f, saved, err)
}

// EditPolicyForm shows a policy to change.
func (h *Handlers) EditPolicyForm(c *gin.Context) {
	p, err := alert.Of(h.Store).PolicyByName(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "alerts.no_policy"))
		return
	}
	h.renderPolicyForm(c, http.StatusOK, policyFormOfPolicy(p), nil)
}

// UpdatePolicy saves a changed policy.
func (h *Handlers) UpdatePolicy(c *gin.Context) {
	f := policyFormOf(c, c.Param("name"))
	p, err := policyOf(f)
	var saved *alert.EscalationPolicy
	if err == nil {
		saved, err = h.Dispatch.Alerts().UpdatePolicy(c.Request.Context(), actor(c), f.Original, p)
	}
	h.afterPolicySave(c, f, saved, err)
}

func (h *Handlers) afterPolicySave(c *gin.Context, f views.PolicyForm, saved *alert.EscalationPolicy, err error) {
	if errs, ok := policyFormErrors(c, err); ok {
		h.renderPolicyForm(c, http.StatusUnprocessableEntity, f, errs)
		return
	}
	if err != nil {
		h.failOr(c, err, func(a answer) { h.renderPolicyForm(c, a.Status, f, a.errs()) }, saying(kernel.ErrNotFound, "alerts.no_policy"))
		return
	}
	h.redirectNotice(c, "/escalation-policies", "saved", saved.Name)
}

// DeletePolicy removes a policy.
func (h *Handlers) DeletePolicy(c *gin.Context) {
	err := h.Dispatch.Alerts().DeletePolicy(c.Request.Context(), actor(c), c.Param("name"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "alerts.no_policy"))
		return
	}
	h.redirectNotice(c, "/escalation-policies", "deleted", c.Param("name"))
}
