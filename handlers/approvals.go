package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/dispatch"
	"herald/kernel"
	"herald/models"
	"herald/views"
)

// ApproveBatch is POST /batches/:id/approve: another operator releases a batch that
// waits for approval.
func (h *Handlers) ApproveBatch(c *gin.Context) {
	h.decideBatch(c, true)
}

// RejectBatch is POST /batches/:id/reject: another operator cancels a batch that waits
// for approval, with a reason.
func (h *Handlers) RejectBatch(c *gin.Context) {
	h.decideBatch(c, false)
}

func (h *Handlers) decideBatch(c *gin.Context, approve bool) {
	ctx := c.Request.Context()
	b, err := h.Store.BatchByID(ctx, c.Param("id"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_batch"))
		return
	}
	notice, reason := "approved", c.PostForm("reason")
	if approve {
		err = h.Dispatch.Approve(ctx, actor(c), b)
	} else {
		notice = "rejected"
		_, err = h.Dispatch.Reject(ctx, actor(c), b, reason)
	}
	if err != nil {
		h.failOr(c, err, func(a answer) {
			h.decisionRefused(c, a, "/batches/"+b.ID, func(v *views.BatchView) { v.Decision = views.DecisionForm{Reason: reason, Errs: a.errs()} })
		}, saying(kernel.ErrStateChanged, "approvals.error.decided"))
		return
	}
	h.redirectNotice(c, "/batches/"+b.ID, notice, b.ID)
}

// WithdrawBatch is a maker taking back their own batch while it awaits approval.
func (h *Handlers) WithdrawBatch(c *gin.Context) {
	ctx := c.Request.Context()
	b, err := h.Store.BatchByID(ctx, c.Param("id"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_batch"))
		return
	}
	if _, err := dispatch.WithdrawBatch(ctx, h.Dispatch, actor(c), b); err != nil {
		h.failOr(c, err, func(a answer) {
			h.decisionRefused(c, a, "/batches/"+b.ID, func(v *views.BatchView) {})
		}, saying(kernel.ErrStateChanged, "approvals.error.decided"))
		return
	}
	h.redirectNotice(c, "/batches/"+b.ID, "note", tr(c, "people.withdraw.done"))
}

// decisionRefused shows a refused decision on a batch, or on its recall: a conflict
// (decided meanwhile, expired) is a note on the batch's page; a reason refused, the
// page again with the reason as typed and what was wrong with it (form sets them);
// any other refusal, the error page.
func (h *Handlers) decisionRefused(c *gin.Context, a answer, batchPath string, form func(*views.BatchView)) {
	switch a.Status {
	case http.StatusConflict:
		h.redirectNotice(c, batchPath, "note", a.Message)
	case http.StatusUnprocessableEntity:
		v, ok := h.batchView(c)
		if !ok {
			return
		}
		form(&v)
		render(c, a.Status, views.BatchPage(page(c, tr(c, "title.batch"), ""), v))
	default:
		showAnswer(c, a)
	}
}

// APIApproveBatch is POST /api/v1/batches/:id/approve (admin scope, never the key that
// sent the batch).
func (h *Handlers) APIApproveBatch(c *gin.Context) {
	h.apiDecideBatch(c, true)
}

// APIRejectBatch is POST /api/v1/batches/:id/reject with {"reason"} (admin scope, never
// the key that sent the batch).
func (h *Handlers) APIRejectBatch(c *gin.Context) {
	h.apiDecideBatch(c, false)
}

// decisionReason reads the body of an API decision on an approval: none to approve,
// {"reason"} to reject. It returns false after answering a bad body.
func decisionReason(c *gin.Context, approve bool) (string, bool) {
	var body struct {
		Reason string `json:"reason"`
	}
	if !approve && !decodeJSON(c, &body) {
		return "", false
	}
	return body.Reason, true
}

func (h *Handlers) apiDecideBatch(c *gin.Context, approve bool) {
	ctx := c.Request.Context()
	reason, ok := decisionReason(c, approve)
	if !ok {
		return
	}
	b, err := h.Store.BatchByID(ctx, c.Param("id"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	if approve {
		err = h.Dispatch.Approve(ctx, actor(c), b)
	} else {
		_, err = h.Dispatch.Reject(ctx, actor(c), b, reason)
	}
	if err != nil {
		h.apiFail(c, err, saying(kernel.ErrStateChanged, "approvals.error.not_awaiting", "Status", b.Status()))
		return
	}
	h.GetBatch(c)
}

// Settings shows the run-time settings an admin changes (the approval threshold).
func (h *Handlers) Settings(c *gin.Context) {
	n, err := h.Store.Intake().ApprovalThreshold(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	h.renderSettings(c, http.StatusOK, views.SettingsForm{ApprovalThreshold: strconv.Itoa(n)}, nil)
}

func (h *Handlers) renderSettings(c *gin.Context, status int, f views.SettingsForm, errs map[string]string) {
	render(c, status, views.SettingsPage(page(c, tr(c, "title.settings"), "settings"), f, h.notice(c), errs))
}

// SaveSettings is POST /settings.
func (h *Handlers) SaveSettings(c *gin.Context) {
	f := views.SettingsForm{ApprovalThreshold: strings.TrimSpace(c.PostForm(models.SettingApprovalThreshold))}
	n, err := strconv.Atoi(f.ApprovalThreshold)
	if err != nil {
		err = kernel.Invalid(models.SettingApprovalThreshold, "approvals.error.threshold", "Max", models.MaxApprovalThreshold)
	} else {
		err = h.Dispatch.SetApprovalThreshold(c.Request.Context(), actor(c), n)
	}
	if errs, ok := fieldErrors(c, err); ok {
		h.renderSettings(c, http.StatusUnprocessableEntity, f, errs)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.redirectNotice(c, "/settings", "saved", tr(c, "approvals.settings.subject"))
}

// settingsJSON is the API's settings shape.
type settingsJSON struct {
	ApprovalThreshold *int `json:"approval_threshold"`
}

// APIGetSettings is GET /api/v1/settings (admin scope).
func (h *Handlers) APIGetSettings(c *gin.Context) {
	n, err := h.Store.Intake().ApprovalThreshold(c.Request.Context())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, settingsJSON{ApprovalThreshold: &n})
}

// APIPutSettings is PUT /api/v1/settings {"approval_threshold":N} (admin scope).
func (h *Handlers) APIPutSettings(c *gin.Context) {
	var body settingsJSON
	if !decodeJSON(c, &body) {
		return
	}
	if body.ApprovalThreshold == nil {
		h.apiFail(c, kernel.Invalid(models.SettingApprovalThreshold, "validation.required"))
		return
	}
	if err := h.Dispatch.SetApprovalThreshold(c.Request.Context(), actor(c), *body.ApprovalThreshold); err != nil {
		h.apiFail(c, err)
		return
	}
	h.APIGetSettings(c)
}
