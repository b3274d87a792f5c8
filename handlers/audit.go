package handlers

import (
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
