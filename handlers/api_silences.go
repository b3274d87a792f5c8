package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"herald/delivery"
	"herald/kernel"
	"herald/silence"
)

// silenceJSON is a silence as the API shows it. Approval is "none" for a silence that
// needed none, ApprovalReasons why it needs one; Holding counts the messages it holds
// now.
type silenceJSON struct {
	ID       int64              `json:"id"`
	Matchers []delivery.Matcher `json:"matchers"`
	StartsAt time.Time          `json:"starts_at"`
	EndsAt   time.Time          `json:"ends_at"`
	// Schedule makes it recurring; absent for a silence of fixed times.
	Schedule  *silence.Schedule `json:"schedule,omitempty"`
	Comment   string            `json:"comment"`
	CreatedBy string            `json:"created_by"`
	OnEnd     string            `json:"on_end"`
	State     string            `json:"state"`
	Approval  string            `json:"approval"`
	// ApprovalReasons are delivery's Broad… codes.
	ApprovalReasons []string   `json:"approval_reasons"`
	ExpiredAt       *time.Time `json:"expired_at"`
	Holding         int        `json:"holding"`
}

func newSilenceJSON(s *silence.Silence, holding int, now time.Time) silenceJSON {
	out := silenceJSON{ID: s.ID, Matchers: s.Matchers, StartsAt: s.StartsAt, EndsAt: s.EndsAt, Schedule: s.Schedule, Comment: s.Comment,
		CreatedBy: s.CreatedBy, OnEnd: s.OnEnd, State: s.State(now), Approval: s.Approval, ApprovalReasons: s.ApprovalReasons,
		ExpiredAt: s.ExpiredAt, Holding: holding}
	if out.Matchers == nil {
		out.Matchers = []delivery.Matcher{}
	}
	if out.ApprovalReasons == nil {
		out.ApprovalReasons = []string{}
	}
	if out.Approval == "" {
		out.Approval = "none"
	}
	return out
}

// silenceBody is a silence as a caller writes it.
type silenceBody struct {
	Matchers []delivery.Matcher `json:"matchers"`
	StartsAt *time.Time         `json:"starts_at"`
	EndsAt   *time.Time         `json:"ends_at"`
	Schedule *silence.Schedule  `json:"schedule"`
	Comment  string             `json:"comment"`
	OnEnd    string             `json:"on_end"`
}

func (b silenceBody) input() silence.SilenceInput {
	return silence.SilenceInput{Matchers: b.Matchers, StartsAt: b.StartsAt, EndsAt: b.EndsAt, Schedule: b.Schedule, Comment: b.Comment, OnEnd: b.OnEnd}
}

// silenceID reads the :id of a silence route; false after answering 404.
func silenceID(c *gin.Context) (int64, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		APIError(c, http.StatusNotFound, "not_found", tr(c, "api.not_found"), "")
		return 0, false
	}
	return id, true
}

// writeSilence answers with one silence and the messages it holds.
func (h *Handlers) writeSilence(c *gin.Context, status int, s *silence.Silence) {
	_, holding, err := silence.Of(h.Store).HeldCounts(c.Request.Context(), []int64{s.ID})
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(status, newSilenceJSON(s, holding[s.ID], kernel.Now()))
}

// APIListSilences is GET /api/v1/silences?state=: the key's own silences (every one
// for an admin key), newest first.
func (h *Handlers) APIListSilences(c *gin.Context) {
	ctx := c.Request.Context()
	list, err := h.Dispatch.Silences().Silences(ctx, actor(c), c.Query("state"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	ids := make([]int64, len(list))
	for i := range list {
		ids[i] = list[i].ID
	}
	_, holding, err := silence.Of(h.Store).HeldCounts(ctx, ids)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	now := kernel.Now()
	out := make([]silenceJSON, len(list))
	for i := range list {
		out[i] = newSilenceJSON(&list[i], holding[list[i].ID], now)
	}
	c.JSON(http.StatusOK, gin.H{"silences": out})
}

// APICreateSilence is POST /api/v1/silences.
func (h *Handlers) APICreateSilence(c *gin.Context) {
	var body silenceBody
	if !decodeJSON(c, &body) {
		return
	}
	s, err := h.Dispatch.Silences().CreateSilence(c.Request.Context(), actor(c), body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	h.writeSilence(c, http.StatusCreated, s)
}

// APIGetSilence is GET /api/v1/silences/:id.
func (h *Handlers) APIGetSilence(c *gin.Context) {
	id, ok := silenceID(c)
	if !ok {
		return
	}
	s, err := h.Dispatch.Silences().Silence(c.Request.Context(), actor(c), id)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	h.writeSilence(c, http.StatusOK, s)
}

// APIUpdateSilence is PUT /api/v1/silences/:id: replaces a silence that has not
// expired (409 when it has).
func (h *Handlers) APIUpdateSilence(c *gin.Context) {
	id, ok := silenceID(c)
	if !ok {
		return
	}
	var body silenceBody
	if !decodeJSON(c, &body) {
		return
	}
	s, err := h.Dispatch.Silences().UpdateSilence(c.Request.Context(), actor(c), id, body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	h.writeSilence(c, http.StatusOK, s)
}

// APIExpireSilence is DELETE /api/v1/silences/:id: expires the silence now; what it
// held is released or cancelled as its on_end says (409 when it had expired).
func (h *Handlers) APIExpireSilence(c *gin.Context) {
	id, ok := silenceID(c)
	if !ok {
		return
	}
	s, err := h.Dispatch.Silences().ExpireSilence(c.Request.Context(), actor(c), id)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	h.writeSilence(c, http.StatusOK, s)
}

// occurrenceJSON is one window of a silence as the API shows it.
type occurrenceJSON struct {
	StartsAt time.Time `json:"starts_at"`
	EndsAt   time.Time `json:"ends_at"`
}

// APISilenceOccurrences is GET /api/v1/silences/:id/occurrences?from=&to=: the windows
// the silence holds in between from and to (RFC 3339; from defaults to now, to to a
// week after from).
func (h *Handlers) APISilenceOccurrences(c *gin.Context) {
	id, ok := silenceID(c)
	if !ok {
		return
	}
	from, err := queryTime(c, "from")
	if err != nil {
		h.apiFail(c, err)
		return
	}
	to, err := queryTime(c, "to")
	if err != nil {
		h.apiFail(c, err)
		return
	}
	if from == nil {
		now := kernel.Now()
		from = &now
	}
	if to == nil {
		week := from.Add(7 * 24 * time.Hour)
		to = &week
	}
	list, err := h.Dispatch.Silences().Occurrences(c.Request.Context(), actor(c), id, *from, *to)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := make([]occurrenceJSON, len(list))
	for i, w := range list {
		out[i] = occurrenceJSON{StartsAt: w.Start, EndsAt: w.End}
	}
	c.JSON(http.StatusOK, gin.H{"occurrences": out})
}
