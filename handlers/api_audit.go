package handlers

import (
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"herald/audit"
	"herald/kernel"
)

// auditEntryJSON is one entry of GET /api/v1/audit: the action code as recorded, its
// named values, and the free-text detail of entries that carry one.
type auditEntryJSON struct {
	ID         int64        `json:"id"`
	At         time.Time    `json:"at"`
	Actor      string       `json:"actor"`
	ActorType  string       `json:"actor_type"`
	Action     string       `json:"action"`
	TargetType string       `json:"target_type"`
	TargetID   string       `json:"target_id"`
	Params     audit.Params `json:"params"`
	Detail     string       `json:"detail"`
	IP         string       `json:"ip"`
}

// ListAuditAPI is GET /api/v1/audit (admin): the audit log with the console's filters,
// newest first, a page at a time (next_cursor continues it; "" on the last page).
func (h *Handlers) ListAuditAPI(c *gin.Context) {
	f := audit.Filter{Actor: c.Query("actor"), Action: c.Query("action"), Target: c.Query("target")}
	for _, v := range []struct {
		field, value string
		max          int
	}{{"actor", f.Actor, 100}, {"action", f.Action, 64}, {"target", f.Target, 64}} {
		if utf8.RuneCountInString(v.value) > v.max {
			h.apiFail(c, kernel.Invalid(v.field, "api.list.too_long", "Max", v.max))
			return
		}
	}
	var err error
	if f.From, err = queryTime(c, "since"); err != nil {
		h.apiFail(c, err)
		return
	}
	if f.Before, err = queryTime(c, "until"); err != nil {
		h.apiFail(c, err)
		return
	}
	if cur := c.Query("cursor"); cur != "" {
		if f.BeforeID, err = strconv.ParseInt(cur, 10, 64); err != nil || f.BeforeID <= 0 {
			h.apiFail(c, kernel.Invalid("cursor", "api.list.cursor"))
			return
		}
	}
	entries, err := h.Store.AuditLog().List(c.Request.Context(), f, listPageSize+1)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	next := ""
	if len(entries) > listPageSize {
		entries = entries[:listPageSize]
		next = strconv.FormatInt(entries[len(entries)-1].ID, 10)
	}
	out := make([]auditEntryJSON, len(entries))
	for i, e := range entries {
		out[i] = auditEntryJSON{ID: e.ID, At: e.At, Actor: e.Actor, ActorType: e.ActorType, Action: e.Action,
			TargetType: e.TargetType, TargetID: e.TargetID, Params: e.ParamMap(), Detail: e.Detail, IP: e.IP}
		if out[i].Params == nil {
			out[i].Params = audit.Params{}
		}
	}
	c.JSON(http.StatusOK, gin.H{"entries": out, "next_cursor": next})
}
