package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"herald/directory"
	"herald/kernel"
)

// recipientJSON is the API's recipient shape (docs/api.md).
type recipientJSON struct {
	ExternalID     string            `json:"external_id"`
	Name           string            `json:"name"`
	OrgType        directory.OrgType `json:"org_type"`
	Branch         string            `json:"branch"`
	Department     string            `json:"department"`
	TianyuanID     string            `json:"tianyuan_id"`
	ZhaohuID       string            `json:"zhaohu_id"`
	WecomUserid    string            `json:"wecom_userid"`
	FeishuUserID   string            `json:"feishu_user_id"`
	DingtalkUserid string            `json:"dingtalk_userid"`
	Email          string            `json:"email"`
	// Mobile is whole: the recipients' API needs the admin scope.
	Mobile string `json:"mobile"`
	Active *bool  `json:"active"`
}

func (r recipientJSON) model() directory.Recipient {
	active := r.Active == nil || *r.Active
	return directory.Recipient{ExternalID: r.ExternalID, Name: r.Name, OrgType: r.OrgType, Branch: r.Branch,
		Department: r.Department, TianyuanID: r.TianyuanID, ZhaohuID: r.ZhaohuID, WecomUserid: r.WecomUserid,
		FeishuUserID: r.FeishuUserID, DingtalkUserid: r.DingtalkUserid, Email: r.Email, Mobile: r.Mobile, Active: active}
}

func toRecipientJSON(r directory.Recipient) recipientJSON {
	active := r.Active
	return recipientJSON{ExternalID: r.ExternalID, Name: r.Name, OrgType: r.OrgType, Branch: r.Branch,
		Department: r.Department, TianyuanID: r.TianyuanID, ZhaohuID: r.ZhaohuID, WecomUserid: r.WecomUserid,
		FeishuUserID: r.FeishuUserID, DingtalkUserid: r.DingtalkUserid, Email: r.Email, Mobile: r.Mobile, Active: &active}
}

// APIListRecipients is GET /api/v1/recipients?q=&org_type=&branch=&active=&after=&limit=.
func (h *Handlers) APIListRecipients(c *gin.Context) {
	f := directory.RecipientFilter{Query: c.Query("q"), OrgType: directory.OrgType(c.Query("org_type")),
		Branch: c.Query("branch"), After: c.Query("after")}
	if v := c.Query("active"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			APIError(c, http.StatusUnprocessableEntity, "validation_failed", fieldMessage(c, kernel.Invalid("active", "recipients.not_bool")), "active")
			return
		}
		f.Active = &b
	}
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			APIError(c, http.StatusUnprocessableEntity, "validation_failed", tr(c, "recipients.api.limit", "Max", 1000), "limit")
			return
		}
		f.Limit = n
	}
	list, err := h.Store.Directory().ListRecipients(c.Request.Context(), f)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := make([]recipientJSON, len(list))
	for i, r := range list {
		out[i] = toRecipientJSON(r)
	}
	next := ""
	if f.Limit > 0 && len(list) == f.Limit || f.Limit == 0 && len(list) == 100 {
		next = list[len(list)-1].ExternalID
	}
	c.JSON(http.StatusOK, gin.H{"recipients": out, "next": next})
}

// APIUpsertRecipients is PUT /api/v1/recipients: a JSON array of recipients, created or
// updated by external_id, all or nothing.
func (h *Handlers) APIUpsertRecipients(c *gin.Context) {
	var body []recipientJSON
	if !decodeJSON(c, &body) {
		return
	}
	list := make([]directory.Recipient, len(body))
	for i, r := range body {
		list[i] = r.model()
	}
	res, err := h.Dispatch.Directory().UpsertRecipients(c.Request.Context(), actor(c), directory.ViaAPI, list)
	if fe, ok := errors.AsType[*kernel.FieldError](err); ok {
		APIError(c, http.StatusUnprocessableEntity, "validation_failed", fe.In(c.Request.Context()), fe.Field)
		return
	}
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, res)
}
