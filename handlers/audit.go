package handlers

import (
	"fmt"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/audit"
)

// consoleActor is the signed-in user, as the audit log records who acted.
func consoleActor(c *gin.Context) audit.Entry {
	return audit.Entry{Actor: CurrentUser(c).Username, ActorType: "user", IP: c.ClientIP()}
}

// auditOnce records a console event that anyone can repeat at will (a throttled
// guess) at most once a minute per key, so that it is on record without flooding it.
func (h *Handlers) auditOnce(c *gin.Context, actor, action, targetType, targetID, detail, key string, params audit.Params) {
	_, err := h.Store.AuditLog().Once(c.Request.Context(), audit.Entry{Actor: actor, ActorType: "user", Action: action,
		TargetType: targetType, TargetID: targetID, Detail: detail, IP: c.ClientIP()}.WithParams(params), key, time.Minute)
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
	request := c.Request.Method + " " + c.Request.URL.Path
	h.audit(c, actor, action, targetType, targetID, fmt.Sprintf("status %d: %s", c.Writer.Status(), request),
		audit.Params{"request": request, "status": strconv.Itoa(c.Writer.Status())})
}

// actor is who makes the request's change, as the service layer takes it: the API key
// (and the person who created it) on an API request, else the signed-in console user.
func actor(c *gin.Context) audit.Actor {
	if k := CurrentAPIKey(c); k != nil {
		return audit.Actor{Name: "apikey:" + k.Name, Type: audit.ActorAPIKey, Person: k.CreatedBy, APIKeyID: k.ID,
			OwnOnly: !k.HasScope(access.ScopeAdmin), IP: c.ClientIP()}
	}
	if u := CurrentUser(c); u != nil {
		return audit.Actor{Name: u.Username, Type: audit.ActorUser, Person: u.Username, IP: c.ClientIP()}
	}
	return audit.Actor{Name: "anonymous", Type: audit.ActorUser, IP: c.ClientIP()}
}

// apiActor is the request's API key, as the audit log records who acted.
func apiActor(c *gin.Context) audit.Entry {
	actor := "apikey:unknown"
	if k := CurrentAPIKey(c); k != nil {
		actor = "apikey:" + k.Name
	}
	return audit.Entry{Actor: actor, ActorType: "api_key", IP: c.ClientIP()}
}

// audit records a console action with the named values of its catalog sentence. A
// failure to write the audit log is logged, not shown: the action itself has already
// happened.
func (h *Handlers) audit(c *gin.Context, actor, action, targetType, targetID, detail string, params audit.Params) {
	h.writeAudit(c, audit.Entry{Actor: actor, ActorType: "user", Action: action,
		TargetType: targetType, TargetID: targetID, Detail: detail, IP: c.ClientIP()}.WithParams(params))
}

// auditAPI records an API action under the API key's name.
func (h *Handlers) auditAPI(c *gin.Context, action, targetType, targetID, detail string) {
	e := apiActor(c)
	e.Action, e.TargetType, e.TargetID, e.Detail = action, targetType, targetID, detail
	h.writeAudit(c, e)
}

func (h *Handlers) writeAudit(c *gin.Context, e audit.Entry) {
	if err := h.Store.AuditLog().Write(c.Request.Context(), e); err != nil {
		h.Log.Error("audit log write failed", "action", e.Action, "error", err)
	}
}
