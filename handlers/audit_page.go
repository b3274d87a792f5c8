package handlers

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/audit"
	"herald/views"
)

// AuditLog shows the audit log, filtered, newest first, one keyset page at a time.
func (h *Handlers) AuditLog(c *gin.Context) {
	v := views.Audit{Filter: views.AuditFilter{Actor: strings.TrimSpace(c.Query("actor")), Action: strings.TrimSpace(c.Query("action")),
		Target: strings.TrimSpace(c.Query("target")), From: strings.TrimSpace(c.Query("from")), To: strings.TrimSpace(c.Query("to"))}}
	errs := map[string]string{}
	f := audit.Filter{Actor: v.Filter.Actor, Action: v.Filter.Action, Target: v.Filter.Target}
	f.From, f.Before = dayRange(c, v.Filter.From, v.Filter.To, h.Location, errs)
	f.BeforeID, _ = strconv.ParseInt(c.Query("before"), 10, 64)
	list, err := h.Store.AuditLog().List(c.Request.Context(), f, pageSize+1)
	if err != nil {
		h.fail(c, err)
		return
	}
	q := url.Values{"actor": {v.Filter.Actor}, "action": {v.Filter.Action}, "target": {v.Filter.Target}, "from": {v.Filter.From}, "to": {v.Filter.To}}
	if len(list) > pageSize {
		list = list[:pageSize]
		next := url.Values{}
		for k, vs := range q {
			next[k] = vs
		}
		next.Set("before", strconv.FormatInt(list[len(list)-1].ID, 10))
		v.Next = withQuery("/audit", next)
	}
	if f.BeforeID > 0 {
		v.First = withQuery("/audit", q)
	}
	v.Entries = list
	var ids []string
	for _, e := range list {
		ids = append(ids, views.AuditPeopleIDs(e)...)
	}
	slices.Sort(ids)
	if ids = slices.Compact(ids); len(ids) > 0 {
		people, err := h.Store.Directory().RecipientsByExternalIDs(c.Request.Context(), ids)
		if err != nil {
			h.fail(c, err)
			return
		}
		v.People = views.AuditPeople{}
		for _, p := range people {
			v.People[p.ExternalID] = p.Name
		}
	}
	status := http.StatusOK
	if len(errs) > 0 {
		status = http.StatusUnprocessableEntity
	}
	render(c, status, views.AuditPage(page(c, tr(c, "title.audit_log"), "audit"), v, errs))
}
