package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"herald/delivery"
	"herald/dispatch"
	"herald/inhibit"
)

// inhibitRuleJSON is the API's inhibition rule shape.
type inhibitRuleJSON struct {
	ID     int64              `json:"id"`
	Name   string             `json:"name"`
	Source []delivery.Matcher `json:"source"`
	Target []delivery.Matcher `json:"target"`
	Equal  []string           `json:"equal"`
}

func toInhibitRuleJSON(r *inhibit.Rule) inhibitRuleJSON {
	out := inhibitRuleJSON{ID: r.ID, Name: r.Name, Source: r.Source, Target: r.Target, Equal: r.Equal}
	for _, l := range []*[]delivery.Matcher{&out.Source, &out.Target} {
		if *l == nil {
			*l = []delivery.Matcher{}
		}
	}
	if out.Equal == nil {
		out.Equal = []string{}
	}
	return out
}

func (in inhibitRuleJSON) input() inhibit.RuleInput {
	return inhibit.RuleInput{Name: in.Name, Source: in.Source, Target: in.Target, Equal: in.Equal}
}

// inhibition is the inhibition rules' service, the same for the console and the API.
func (h *Handlers) inhibition() *inhibit.Referee { return dispatch.Inhibition(h.Dispatch) }

// inhibitRuleID reads the :id of a rule's route as alertID does an alert's; false after
// answering 404.
var inhibitRuleID = alertID

// APIListInhibitRules is GET /api/v1/inhibit-rules: every rule, by name.
func (h *Handlers) APIListInhibitRules(c *gin.Context) {
	list, err := h.inhibition().Rules(c.Request.Context())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := make([]inhibitRuleJSON, len(list))
	for i := range list {
		out[i] = toInhibitRuleJSON(&list[i])
	}
	c.JSON(http.StatusOK, gin.H{"inhibit_rules": out})
}

// APIGetInhibitRule is GET /api/v1/inhibit-rules/:id.
func (h *Handlers) APIGetInhibitRule(c *gin.Context) {
	id, ok := inhibitRuleID(c)
	if !ok {
		return
	}
	r, err := h.inhibition().Rule(c.Request.Context(), id)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toInhibitRuleJSON(r))
}

// APICreateInhibitRule is POST /api/v1/inhibit-rules.
func (h *Handlers) APICreateInhibitRule(c *gin.Context) {
	var body inhibitRuleJSON
	if !decodeJSON(c, &body) {
		return
	}
	r, err := h.inhibition().CreateRule(c.Request.Context(), actor(c), body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusCreated, toInhibitRuleJSON(r))
}

// APIUpdateInhibitRule is PUT /api/v1/inhibit-rules/:id.
func (h *Handlers) APIUpdateInhibitRule(c *gin.Context) {
	id, ok := inhibitRuleID(c)
	if !ok {
		return
	}
	var body inhibitRuleJSON
	if !decodeJSON(c, &body) {
		return
	}
	r, err := h.inhibition().UpdateRule(c.Request.Context(), actor(c), id, body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toInhibitRuleJSON(r))
}

// APIDeleteInhibitRule is DELETE /api/v1/inhibit-rules/:id.
func (h *Handlers) APIDeleteInhibitRule(c *gin.Context) {
	id, ok := inhibitRuleID(c)
	if !ok {
		return
	}
	if err := h.inhibition().DeleteRule(c.Request.Context(), actor(c), id); err != nil {
		h.apiFail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
