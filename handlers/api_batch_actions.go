package handlers

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// batchCancelJSON is the answer of POST /api/v1/batches/:id/cancel.
type batchCancelJSON struct {
	BatchID   string `json:"batch_id"`
	Cancelled int    `json:"cancelled"`
	Skipped   int    `json:"skipped"`
}

// APICancelBatch is POST /api/v1/batches/:id/cancel: 200 with how many messages not
// sent yet were cancelled, and how many moved on meanwhile.
func (h *Handlers) APICancelBatch(c *gin.Context) {
	res, err := h.Dispatch.Messages().CancelBatch(c.Request.Context(), actor(c), c.Param("id"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, batchCancelJSON{BatchID: c.Param("id"), Cancelled: res.Cancelled, Skipped: res.Skipped})
}

// batchResendJSON is the answer of POST /api/v1/batches/:id/resend.
type batchResendJSON struct {
	BatchID string `json:"batch_id"`
	Resent  int    `json:"resent"`
	Skipped int    `json:"skipped"`
}

// APIResendBatch is POST /api/v1/batches/:id/resend: 200 with how many stopped messages
// are due again, and how many moved on meanwhile.
func (h *Handlers) APIResendBatch(c *gin.Context) {
	res, err := h.Dispatch.Messages().ResendBatch(c.Request.Context(), actor(c), c.Param("id"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, batchResendJSON{BatchID: c.Param("id"), Resent: res.Retried, Skipped: res.Skipped})
}
