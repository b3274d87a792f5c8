package handlers

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"herald/kernel"
	"herald/recall"
)

// RecallMessageAPI is POST /api/v1/messages/:id/recall: a sent message is taken back on
// its platform, one not sent yet is cancelled; 200 with the message as GET shows it.
// A recall that cannot happen is 409 naming why (recall_unsupported,
// recall_window_passed, invalid_state, or recall_request_awaiting and
// recall_request_rejected naming the batch recall request of the caller that stands
// in the way); one the platform refused is 502 recall_failed.
func (h *Handlers) RecallMessageAPI(c *gin.Context) {
	m, err := h.Dispatch.Recalls().RecallMessage(c.Request.Context(), actor(c), c.Param("id"))
	if err != nil {
		h.apiFail(c, err, saying(kernel.ErrStateChanged, "recall.error.state", "Status", messageStatus(m)))
		return
	}
	h.GetMessage(c)
}

// batchRecallJSON is the answer of POST /api/v1/batches/:id/recall.
type batchRecallJSON struct {
	BatchID string `json:"batch_id"`
	// Status is "completed", or "awaiting_approval" when the recall waits for another
	// person's approval (counts are then all zero).
	Status string              `json:"status"`
	People int                 `json:"people"`
	Counts recall.RecallCounts `json:"counts"`
	// ExpiresAt is when a recall awaiting approval lapses undecided.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// RecallBatchAPI is POST /api/v1/batches/:id/recall: 202 with the counts per outcome,
// or awaiting_approval for more people than the approval threshold.
func (h *Handlers) RecallBatchAPI(c *gin.Context) {
	res, err := h.Dispatch.Recalls().RecallBatch(c.Request.Context(), actor(c), c.Param("id"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := batchRecallJSON{BatchID: c.Param("id"), Status: "completed", People: res.People, Counts: res.Counts}
	if res.AwaitingApproval {
		out.Status, out.ExpiresAt = recall.RecallAwaiting, res.ExpiresAt
	}
	c.JSON(http.StatusAccepted, out)
}

// recallRequestJSON is a batch's recall request as the API shows it: in GET
// /api/v1/batches/:id, and as the answer to a decision on it.
type recallRequestJSON struct {
	BatchID     string `json:"batch_id"`
	Status      string `json:"status"`
	People      int    `json:"people"`
	RequestedBy string `json:"requested_by"`
	// ExpiresAt is when the request lapses undecided (null for a request older than
	// expiry).
	ExpiresAt    *time.Time           `json:"expires_at"`
	DecidedBy    string               `json:"decided_by"`
	DecidedAt    *time.Time           `json:"decided_at"`
	DecisionNote string               `json:"decision_note"`
	Result       *recall.RecallCounts `json:"result"`
}

// recallRequestOf is r as the API shows it at now (nil for none): one past its
// expiry reads expired, recorded or not.
func recallRequestOf(r *recall.RecallRequest, now time.Time) *recallRequestJSON {
	if r == nil {
		return nil
	}
	out := &recallRequestJSON{BatchID: r.BatchID, Status: r.State(now), People: r.People, RequestedBy: r.RequestedBy,
		ExpiresAt: r.ExpiresAt, DecidedBy: r.DecidedBy, DecidedAt: r.DecidedAt, DecisionNote: r.DecisionNote, Result: r.Result}
	if r.Lapsed(now) {
		out.DecidedAt = r.ExpiresAt
	}
	return out
}

// APIApproveRecall is POST /api/v1/batches/:id/recall/approve (admin scope, never the
// person or key who asked): the recall runs at once; 202 with the request, its result
// counting each outcome.
func (h *Handlers) APIApproveRecall(c *gin.Context) {
	h.apiDecideRecall(c, true)
}

// APIRejectRecall is POST /api/v1/batches/:id/recall/reject with {"reason"} (admin
// scope, never the person or key who asked): nothing is recalled; 200 with the request.
func (h *Handlers) APIRejectRecall(c *gin.Context) {
	h.apiDecideRecall(c, false)
}

// apiDecideRecall decides on a batch's recall request as a large send's approval is
// decided (apiDecideBatch): the same scope, body and errors, and 409
// recall_request_expired for a request whose time ran out.
func (h *Handlers) apiDecideRecall(c *gin.Context, approve bool) {
	reason, ok := decisionReason(c, approve)
	if !ok {
		return
	}
	ctx, by, id := c.Request.Context(), actor(c), c.Param("id")
	var err error
	status := http.StatusOK
	if approve {
		_, err = h.Dispatch.Recalls().ApproveRecall(ctx, by, id)
		status = http.StatusAccepted
	} else {
		err = h.Dispatch.Recalls().RejectRecall(ctx, by, id, reason)
	}
	if err != nil {
		h.apiFail(c, err, saying(kernel.ErrStateChanged, "recall.error.not_awaiting"))
		return
	}
	r, err := h.Dispatch.Recalls().RecallRequest(ctx, by, id)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(status, recallRequestOf(r, time.Now()))
}
