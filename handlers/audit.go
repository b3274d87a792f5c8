package handlers

import (
	"fmt"
	"time"

	"github.com/gin-gonic/gin"

	"herald/models"
)

// audit records a console action. A failure to write the audit log is logged, not shown:
// the action itself has already happened.
func (h *Handlers) audit(c *gin.Context, actor, action, targetType, targetID, detail string) {
	err := h.Store.Audit(c.Request.Context(), models.AuditEntry{Actor: actor, ActorType: "user", Action: action,
		TargetType: targetType, TargetID: targetID, Detail: detail, IP: c.ClientIP()})
	if err != nil {
		h.Log.Error("audit log write failed", "action", action, "error", err)
	}
}

// auditOnce records a console event that anyone can repeat at will (a throttled
// guess) at most once a minute per key, so that it is on record without flooding it.
func (h *Handlers) auditOnce(c *gin.Context, actor, action, targetType, targetID, detail, key string) {
	_, err := h.Store.AuditOnce(c.Request.Context(), models.AuditEntry{Actor: actor, ActorType: "user", Action: action,
		TargetType: targetType, TargetID: targetID, Detail: detail, IP: c.ClientIP()}, key, time.Minute)
	if err != nil {
		h.Log.Error("audit log write failed", "action", action, "error", err)
	}
}

// AuditRequest records the request the signed-in user just made, with the status it got,
// for routes that no handler here serves (Asynqmon's), so that nothing changes unaudited.
func (h *Handlers) AuditRequest(c *gin.Context, action, targetType, targetID string) {
	actor := ""
	if u := CurrentUser(c); u != nil {
		actor = u.Username
	}
	h.audit(c, actor, action, targetType, targetID, fmt.Sprintf("status %d: %s %s", c.Writer.Status(), c.Request.Method, c.Request.URL.Path))
}

// auditAPI records an API action under the API key's name.
func (h *Handlers) auditAPI(c *gin.Context, action, targetType, targetID, detail string) {
	actor := "apikey:unknown"
	if k := CurrentAPIKey(c); k != nil {
		actor = "apikey:" + k.Name
	}
	err := h.Store.Audit(c.Request.Context(), models.AuditEntry{Actor: actor, ActorType: "api_key", Action: action,
		TargetType: targetType, TargetID: targetID, Detail: detail, IP: c.ClientIP()})
	if err != nil {
		h.Log.Error("audit log write failed", "action", action, "error", err)
	}
}
