package handlers

import (
	"github.com/gin-gonic/gin"
	"strings"

	"herald/models"
)

// consoleActor is the signed-in user, as the audit log records who acted.
func consoleActor(c *gin.Context) models.AuditEntry {
	return models.AuditEntry{Actor: CurrentUser(c).Username, ActorType: "user", IP: c.ClientIP()}
}

// apiActor is the request's API key, as the audit log records who acted.
func apiActor(c *gin.Context) models.AuditEntry {
	actor := "apikey:unknown"
	if k := CurrentAPIKey(c); k != nil {
		actor = "apikey:" + k.Name
	}
	return models.AuditEntry{Actor: actor, ActorType: "api_key", IP: c.ClientIP()}
}

// audit records a console action. A failure to write the audit log is logged, not shown:
// the action itself has already happened.
func (h *Handlers) audit(c *gin.Context, actor, action, targetType, targetID, detail string) {
	h.writeAudit(c, models.AuditEntry{Actor: actor, ActorType: "user", Action: action,
		TargetType: targetType, TargetID: targetID, Detail: detail, IP: c.ClientIP()})
}

// auditAPI records an API action under the API key's name.
func (h *Handlers) auditAPI(c *gin.Context, action, targetType, targetID, detail string) {
	e := apiActor(c)
	e.Action, e.TargetType, e.TargetID, e.Detail = action, targetType, targetID, detail
	h.writeAudit(c, e)
}

func (h *Handlers) writeAudit(c *gin.Context, e models.AuditEntry) {
	if err := h.Store.Audit(c.Request.Context(), e); err != nil {
		h.Log.Error("audit log write failed", "action", e.Action, "error", err)
	}
}

// recipientActions names a bulk upsert's change as the audit log's recipient actions,
// the same ones the single-recipient console forms write.
var recipientActions = map[string]string{"created": "recipient.create", "updated": "recipient.update",
	"deactivated": "recipient.deactivate", "reactivated": "recipient.activate"}

// auditRecipientChanges writes one entry per recipient a bulk upsert changed (via says
// which bulk action: an import, the API), so an auditor can answer who changed E1001,
// when and from where. The actor is the API key of an API call, else the console user.
func (h *Handlers) auditRecipientChanges(c *gin.Context, via string, res models.UpsertResult) {
	actor, actorType := "", "user"
	if k := CurrentAPIKey(c); k != nil {
		actor, actorType = "apikey:"+k.Name, "api_key"
	} else if u := CurrentUser(c); u != nil {
		actor = u.Username
	}
	entries := make([]models.AuditEntry, 0, len(res.Changes))
	for _, ch := range res.Changes {
		detail := via
		if len(ch.Fields) > 0 {
			detail += ": " + strings.Join(ch.Fields, ", ")
		}
		entries = append(entries, models.AuditEntry{Actor: actor, ActorType: actorType, Action: recipientActions[ch.Action],
			TargetType: "recipient", TargetID: ch.ExternalID, Detail: detail, IP: c.ClientIP()})
	}
	if err := h.Store.AuditMany(c.Request.Context(), entries); err != nil {
		h.Log.Error("audit log write failed", "action", "recipients bulk", "error", err)
	}
}
