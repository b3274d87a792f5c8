package handlers

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"herald/dispatch"
	"herald/models"
)

// RecallMessageAPI is POST /api/v1/messages/:id/recall: a sent message is taken back on
// its platform, one not sent yet is cancelled; 200 with the message as GET shows it.
// A recall that cannot happen is 409 naming why (recall_unsupported,
// recall_window_passed, invalid_state); one the platform refused is 502 recall_failed.
func (h *Handlers) RecallMessageAPI(c *gin.Context) {
	m, err := h.Dispatch.RecallMessage(c.Request.Context(), actor(c), c.Param("id"))
	var re *dispatch.RecallError
	switch {
	case errors.As(err, &re) && re.Code == dispatch.RecallFailed:
		APIError(c, http.StatusBadGateway, "recall_failed", tr(c, "recall.error.failed", "Error", re.Unwrap().Error()), "")
	case errors.As(err, &re):
		APIError(c, http.StatusConflict, re.Code, tr(c, "recall.error."+re.Code), "")
	case errors.Is(err, models.ErrStateChanged):
		APIError(c, http.StatusConflict, "invalid_state", tr(c, "recall.error.state", "Status", string(m.Status)), "")
	case err != nil:
		h.apiFail(c, err)
	default:
		h.GetMessage(c)
	}
}

// batchRecallJSON is the answer of POST /api/v1/batches/:id/recall.
type batchRecallJSON struct {
	BatchID string `json:"batch_id"`
	// Status is "completed", or "awaiting_approval" when the recall waits for another
	// person's approval (counts are then all zero).
	Status string              `json:"status"`
	People int                 `json:"people"`
	Counts models.RecallCounts `json:"counts"`
}

// RecallBatchAPI is POST /api/v1/batches/:id/recall: 202 with the counts per outcome,
// or awaiting_approval for more people than the approval threshold.
func (h *Handlers) RecallBatchAPI(c *gin.Context) {
	res, err := h.Dispatch.RecallBatch(c.Request.Context(), actor(c), c.Param("id"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := batchRecallJSON{BatchID: c.Param("id"), Status: "completed", People: res.People, Counts: res.Counts}
	if res.AwaitingApproval {
		out.Status = models.RecallAwaiting
	}
	c.JSON(http.StatusAccepted, out)
}
