package handlers

import (
	"github.com/gin-gonic/gin"

	"herald/i18n"
	"herald/kernel"
)

// CancelBatch is POST /batches/:id/cancel: every message of the batch not sent yet
// (scheduled, pending, failed) is cancelled; the batch page says how many.
func (h *Handlers) CancelBatch(c *gin.Context) {
	ctx := c.Request.Context()
	id := c.Param("id")
	res, err := h.Dispatch.Messages().CancelBatch(ctx, actor(c), id)
	if h.batchFailed(c, id, err) {
		return
	}
	sentence := i18n.N(ctx, "batches.cancel.done", res.Cancelled)
	if res.Cancelled == 0 && res.Skipped == 0 {
		sentence = tr(c, "batches.cancel.nothing")
	}
	if res.Skipped > 0 {
		sentence += " " + i18n.N(ctx, "batches.cancel.skipped", res.Skipped)
	}
	h.redirectNotice(c, "/batches/"+id, "note", sentence)
}

// ResendBatch is POST /batches/:id/resend: the batch's stopped messages are sent again.
func (h *Handlers) ResendBatch(c *gin.Context) {
	ctx := c.Request.Context()
	id := c.Param("id")
	res, err := h.Dispatch.Messages().ResendBatch(ctx, actor(c), id)
	if h.batchFailed(c, id, err) {
		return
	}
	h.redirectNotice(c, "/batches/"+id, "resent", i18n.N(ctx, "messages.resend.subject", res.Retried))
}

// batchFailed answers an action on a batch that failed, and reports whether it did: a
// batch the user may not see (or none) is 404, anything else its own answer.
func (h *Handlers) batchFailed(c *gin.Context, id string, err error) bool {
	if err == nil {
		return false
	}
	h.fail(c, err, saying(kernel.ErrNotFound, "error.no_batch", "ID", id))
	return true
}
