package handlers

import (
	"github.com/gin-gonic/gin"

	"herald/i18n"
	"herald/kernel"
	"herald/recall"
	"herald/views"
)

// MessageRecall is POST /messages/:id/recall: a sent message is taken back on its
// platform (one not sent yet is cancelled); a recall that cannot happen is shown on the
// message page, saying why.
func (h *Handlers) MessageRecall(c *gin.Context) {
	ctx := c.Request.Context()
	id := c.Param("id")
	m, err := h.Dispatch.Recalls().RecallMessage(ctx, actor(c), id)
	if err != nil {
		h.failOr(c, err, func(a answer) { h.renderMessage(c, a.Status, a.errs()) }, saying(kernel.ErrNotFound, "error.no_message", "ID", id),
			saying(kernel.ErrStateChanged, "recall.error.state", "Status", statusInSentence(c, m)))
		return
	}
	h.redirectNotice(c, "/messages/"+id, "note", tr(c, "recall.notice.message", "ID", views.ShortID(id)))
}

// BatchRecall is POST /batches/:id/recall: every message of the batch is recalled (or
// cancelled when not sent yet), or, for more people than the approval threshold, a
// request waits for another person's approval. The batch page says what happened.
func (h *Handlers) BatchRecall(c *gin.Context) {
	id := c.Param("id")
	res, err := h.Dispatch.Recalls().RecallBatch(c.Request.Context(), actor(c), id)
	if h.batchFailed(c, id, err) {
		return
	}
	if res.AwaitingApproval {
		h.redirectNotice(c, "/batches/"+id, "note", i18n.N(c.Request.Context(), "recall.notice.awaiting", res.People))
		return
	}
	h.redirectNotice(c, "/batches/"+id, "note", recallSummary(c, res.Counts))
}

// recallSummary says what a batch recall did, in the reader's language.
func recallSummary(c *gin.Context, n recall.RecallCounts) string {
	return tr(c, "recall.notice.batch", "Recalled", n.Recalled, "Cancelled", n.Cancelled,
		"Unsupported", n.RecallUnsupported, "WindowPassed", n.RecallWindowPassed, "Failed", n.Failed)
}

// ApproveRecall is POST /batches/:id/recall/approve: another operator approves a batch
// recall that waits, which runs it.
func (h *Handlers) ApproveRecall(c *gin.Context) {
	id := c.Param("id")
	n, err := h.Dispatch.Recalls().ApproveRecall(c.Request.Context(), actor(c), id)
	if h.recallDecisionFailed(c, id, err, "") {
		return
	}
	h.redirectNotice(c, "/batches/"+id, "note", recallSummary(c, n))
}

// RejectRecall is POST /batches/:id/recall/reject with a reason: another operator
// refuses a batch recall that waits; nothing is recalled.
func (h *Handlers) RejectRecall(c *gin.Context) {
	id, reason := c.Param("id"), c.PostForm("reason")
	err := h.Dispatch.Recalls().RejectRecall(c.Request.Context(), actor(c), id, reason)
	if h.recallDecisionFailed(c, id, err, reason) {
		return
	}
	h.redirectNotice(c, "/batches/"+id, "note", tr(c, "recall.notice.rejected"))
}

// recallDecisionFailed answers a decision on a recall request that failed, and reports
// whether it did: the requester is refused, a request decided already is a note, a
// reason refused shows beside the field with what was typed.
func (h *Handlers) recallDecisionFailed(c *gin.Context, id string, err error, reason string) bool {
	if err == nil {
		return false
	}
	h.failOr(c, err, func(a answer) {
		h.decisionRefused(c, a, "/batches/"+id, func(v *views.BatchView) { v.RecallDecision = views.DecisionForm{Reason: reason, Errs: a.errs()} })
	}, saying(kernel.ErrNotFound, "error.no_batch", "ID", id), saying(kernel.ErrStateChanged, "recall.error.decided"))
	return true
}
