package handlers

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"herald/channels"
	"herald/dispatch"
	"herald/kernel"
	"herald/models"
	"herald/templates"
)

// sendRequest is the body of POST /api/v1/messages (docs/api.md).
type sendRequest struct {
	Platform       string            `json:"platform"`
	Account        string            `json:"account"`
	Recipients     []string          `json:"recipients"`
	Departments    []string          `json:"departments"`
	Branches       []string          `json:"branches"`
	ToOnDuty       bool              `json:"to_on_duty"`
	Template       string            `json:"template"`
	Variables      map[string]string `json:"variables"`
	Content        *sendContent      `json:"content"`
	Priority       models.Priority   `json:"priority"`
	SendAt         *string           `json:"send_at"`
	IdempotencyKey string            `json:"idempotency_key"`
	Fallback       []string          `json:"fallback"`
	// Groups name chat groups: one post to each, beside or instead of recipients.
	Groups []string `json:"groups,omitempty"`
	// Mention says whom the posts to groups @ (on_duty, none, staff ids) instead of
	// each group's own setting.
	Mention []string `json:"mention,omitempty"`

	// TemplateVersion pins an older version of the template (absent: its latest).
	TemplateVersion int `json:"template_version,omitempty"`
	// Ack makes the send an alert someone must acknowledge.
	Ack *dispatch.AckRequest `json:"ack,omitempty"`
	// Digest folds the notices to each person into digests.
	Digest *templates.DigestRequest `json:"digest,omitempty"`
}

type sendContent struct {
	Subject string `json:"subject"`
	Text    string `json:"text"`
}

type messageRef struct {
	ID        string `json:"id"`
	Recipient string `json:"recipient"`
	// Group names the chat group of a post to one (recipient is then "").
	Group  string `json:"group,omitempty"`
	Status string `json:"status"`
}

type sendResponse struct {
	BatchID string `json:"batch_id"`
	// Status is the batch's: open, or awaiting_approval when it is for more people than
	// the approval threshold.
	Status   string         `json:"status"`
	Accepted int            `json:"accepted"`
	Messages []messageRef   `json:"messages"`
	Skipped  models.Reasons `json:"skipped"`
	Rejected models.Reasons `json:"rejected"`
	// AlertID is the alert a send with ack opened.
	AlertID *int64 `json:"alert_id,omitempty"`
}

// parseSendAt requires an RFC 3339 time with an offset: a bare local time is ambiguous.
func parseSendAt(s *string) (*time.Time, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		if _, e2 := time.Parse("2006-01-02T15:04:05", *s); e2 == nil {
			return nil, kernel.Invalid("send_at", "api.send_at_offset")
		}
		return nil, kernel.Invalid("send_at", "api.send_at_format")
	}
	return &t, nil
}

// SendMessages is POST /api/v1/messages: intake through dispatch, idempotent by key.
func (h *Handlers) SendMessages(c *gin.Context) {
	var body sendRequest
	if !decodeJSON(c, &body) {
		return
	}
	key := CurrentAPIKey(c)
	sendAt, err := parseSendAt(body.SendAt)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	req := dispatch.Request{Source: "api", Actor: "apikey:" + key.Name, Makers: []string{key.CreatedBy}, APIKeyID: &key.ID, MaxRecipients: key.MaxRecipientsPerRequest,
		Platform: body.Platform, Account: body.Account, Recipients: body.Recipients, ToOnDuty: body.ToOnDuty,
		Departments: body.Departments, Branches: body.Branches, Groups: body.Groups, Mention: body.Mention,
		Template: body.Template, TemplateVersion: body.TemplateVersion, Variables: body.Variables, Priority: body.Priority, SendAt: sendAt,
		IdempotencyKey: body.IdempotencyKey, AuditIP: c.ClientIP(), Fallback: body.Fallback, Ack: body.Ack, Digest: body.Digest}
	if body.Content != nil {
		req.Subject, req.Text = body.Content.Subject, body.Content.Text
	}
	if key.CallbackURL != "" {
		req.CallbackKeyID = &key.ID
	}
	// The body encoded again is the request in one fixed form: spacing and key order
	// do not change it. Only a request with a key is compared with an earlier one.
	var canonical []byte
	if body.IdempotencyKey != "" {
		canonical, _ = json.Marshal(body)
	}
	res, replay, err := h.Dispatch.SubmitIdempotent(c.Request.Context(), req, canonical, func(res *dispatch.Result) (int, []byte) {
		b, _ := json.Marshal(newSendResponse(res))
		return http.StatusAccepted, b
	})
	switch {
	case err != nil:
		h.apiFail(c, err)
	case replay != nil:
		c.Header("Idempotent-Replayed", "true")
		c.Data(replay.StatusCode, "application/json; charset=utf-8", replay.Body)
	default:
		c.JSON(http.StatusAccepted, newSendResponse(res))
	}
}

func newSendResponse(res *dispatch.Result) sendResponse {
	out := sendResponse{BatchID: res.Batch.ID, Status: res.Batch.Status(), Accepted: len(res.Messages), Messages: make([]messageRef, len(res.Messages)),
		Skipped: nonNil(res.Skipped), Rejected: nonNil(res.Rejected)}
	for i, m := range res.Messages {
		out.Messages[i] = messageRef{ID: m.ID, Recipient: res.Names[m.RecipientID], Status: string(m.Status)}
		if m.ChatGroupID != nil {
			out.Messages[i].Group = res.Groups[*m.ChatGroupID]
		}
	}
	if res.Alert != nil {
		out.AlertID = &res.Alert.ID
	}
	return out
}

func nonNil(r models.Reasons) models.Reasons {
	if r == nil {
		return models.Reasons{}
	}
	return r
}

// attemptJSON is one provider call in a message's history.
type attemptJSON struct {
	N            int       `json:"n"`
	StartedAt    time.Time `json:"started_at"`
	DurationMs   int       `json:"duration_ms"`
	Outcome      string    `json:"outcome"`
	ErrorClass   string    `json:"error_class,omitempty"`
	ProviderCode string    `json:"provider_code,omitempty"`
	Error        string    `json:"error,omitempty"`
}

type messageJSON struct {
	ID                string          `json:"id"`
	BatchID           string          `json:"batch_id"`
	Recipient         string          `json:"recipient"`
	Platform          string          `json:"platform"`
	Address           string          `json:"address"`
	Status            string          `json:"status"`
	Priority          models.Priority `json:"priority"`
	Attempts          int             `json:"attempts"`
	MaxAttempts       int             `json:"max_attempts"`
	SendAt            time.Time       `json:"send_at"`
	NextAttemptAt     *time.Time      `json:"next_attempt_at"`
	ErrorClass        string          `json:"error_class"`
	LastError         string          `json:"last_error"`
	ProviderMessageID string          `json:"provider_message_id"`
	TaskID            string          `json:"task_id,omitempty"`
	CreatedAt         time.Time       `json:"created_at"`
	SentAt            *time.Time      `json:"sent_at"`
	FallbackOf        *string         `json:"fallback_of"`
	FallbackNext      *string         `json:"fallback_next"`
	RecalledAt        *time.Time      `json:"recalled_at"`
	RecalledBy        string          `json:"recalled_by"`
	History           []attemptJSON   `json:"history"`

	// TemplateVersion is the template version the content was rendered from.
	TemplateVersion *int `json:"template_version"`
	// DigestMessageID is the message that carried a digested notice.
	DigestMessageID *string `json:"digest_message_id"`
	// Group names the chat group of a post to one (recipient is then ""); Mentions are
	// the people the post @s, by name.
	Group    string   `json:"group,omitempty"`
	Mentions []string `json:"mentions,omitempty"`
}

// GetMessage is GET /api/v1/messages/:id: the message, its state and its attempts.
func (h *Handlers) GetMessage(c *gin.Context) {
	ctx := c.Request.Context()
	m, err := h.Dispatch.Messages().Message(ctx, actor(c), c.Param("id"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	attempts, err := h.Store.AttemptsOf(ctx, m.ID)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := messageJSON{ID: m.ID, BatchID: m.BatchID, Recipient: m.RecipientExternalID, Platform: m.Platform, Address: m.Address,
		Status: string(m.Status), Priority: m.Priority, Attempts: m.Attempts, MaxAttempts: m.MaxAttempts, SendAt: m.SendAt,
		NextAttemptAt: m.NextAttemptAt, ErrorClass: m.ErrorClass, LastError: m.LastError, ProviderMessageID: m.ProviderMessageID,
		TaskID: m.TaskID, CreatedAt: m.CreatedAt, SentAt: m.SentAt, FallbackOf: m.FallbackOf, FallbackNext: m.FallbackNext,
		RecalledAt: m.RecalledAt, RecalledBy: m.RecalledBy, TemplateVersion: m.TemplateVersion, DigestMessageID: m.DigestMessageID,
		History: make([]attemptJSON, len(attempts))}
	if m.Status.Terminal() || m.Status == models.StatusSending {
		out.NextAttemptAt = nil
	}
	if m.ChatGroupID != nil {
		out.Group = m.RecipientName
		for _, x := range models.MentionsOf(m.Mentions) {
			out.Mentions = append(out.Mentions, x.Name)
		}
	}
	for i, a := range attempts {
		out.History[i] = attemptJSON{N: a.N, StartedAt: a.StartedAt, DurationMs: a.DurationMs, Outcome: a.Outcome,
			ErrorClass: a.ErrorClass, ProviderCode: a.ProviderCode, Error: a.Error}
	}
	c.JSON(http.StatusOK, out)
}

// GetBatch is GET /api/v1/batches/:id: counts by status, skipped and rejected.
func (h *Handlers) GetBatch(c *gin.Context) {
	ctx := c.Request.Context()
	b, err := h.Dispatch.Messages().Batch(ctx, actor(c), c.Param("id"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	counts, err := h.Store.BatchStatusCounts(ctx, b.ID)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	byStatus := map[string]int{}
	for _, s := range models.AllStatuses {
		byStatus[string(s)] = counts.ByStatus[s]
	}
	byStatus["reached"] = counts.Reached
	req, err := h.Dispatch.Recalls().RecallRequest(ctx, actor(c), b.ID)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": b.ID, "source": b.Source, "platform": b.Platform, "priority": b.Priority,
		"send_at": b.SendAt, "created_at": b.CreatedAt, "to_on_duty": b.ToOnDuty, "requested": b.Requested,
		"accepted": b.Accepted, "counts": byStatus, "skipped": nonNil(b.Skipped), "rejected": nonNil(b.Rejected),
		"status": b.Status(), "decided_by": b.DecidedBy, "decided_at": b.DecidedAt, "decision_note": b.DecisionNote,
		"recall_request": recallRequestOf(req, time.Now())})
}

// CancelMessage is POST /api/v1/messages/:id/cancel.
func (h *Handlers) CancelMessage(c *gin.Context) {
	h.changeMessage(c, "cancel")
}

// RetryMessage is POST /api/v1/messages/:id/retry.
func (h *Handlers) RetryMessage(c *gin.Context) {
	h.changeMessage(c, "retry")
}

func (h *Handlers) changeMessage(c *gin.Context, op string) {
	ctx := c.Request.Context()
	change := h.Dispatch.Messages().CancelMessage
	if op == "retry" {
		change = h.Dispatch.Messages().RetryMessage
	}
	m, err := change(ctx, actor(c), c.Param("id"))
	if err != nil {
		h.apiFail(c, err, saying(kernel.ErrStateChanged, "api.cannot_"+op, "Status", messageStatus(m)))
		return
	}
	if m, err = h.Store.MessageByID(ctx, m.ID); err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": m.ID, "status": m.Status})
}

// listPageSize is how many items one page of an API list holds.
const listPageSize = 100

// messageSummaryJSON is one message of GET /api/v1/messages: the message's state without
// its content or its history (GET /api/v1/messages/:id has them).
type messageSummaryJSON struct {
	ID            string     `json:"id"`
	BatchID       string     `json:"batch_id"`
	Recipient     string     `json:"recipient"`
	RecipientName string     `json:"recipient_name"`
	Platform      string     `json:"platform"`
	Address       string     `json:"address"`
	Status        string     `json:"status"`
	Priority      string     `json:"priority"`
	Attempts      int        `json:"attempts"`
	MaxAttempts   int        `json:"max_attempts"`
	SendAt        time.Time  `json:"send_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	ErrorClass    string     `json:"error_class"`
	LastError     string     `json:"last_error"`
	CreatedAt     time.Time  `json:"created_at"`
	SentAt        *time.Time `json:"sent_at"`
	// DigestMessageID is the message that carried a digested notice.
	DigestMessageID *string `json:"digest_message_id"`
}

// ListMessagesAPI is GET /api/v1/messages: the console's message list and its filters,
// newest first, a page at a time (next_cursor continues it; "" on the last page). A send
// or read key lists the messages of its own batches only. A filter value that cannot be
// read is 422 naming it.
func (h *Handlers) ListMessagesAPI(c *gin.Context) {
	ctx := c.Request.Context()
	f, after, err := h.apiMessageFilter(c)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	rows, err := h.Dispatch.Messages().Messages(ctx, actor(c), f, after, listPageSize+1)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	next := ""
	if len(rows) > listPageSize {
		rows = rows[:listPageSize]
		last := rows[len(rows)-1]
		next = models.MessageCursor{CreatedAt: last.CreatedAt, ID: last.ID}.String()
	}
	out := make([]messageSummaryJSON, len(rows))
	for i, m := range rows {
		out[i] = messageSummaryJSON{ID: m.ID, BatchID: m.BatchID, Recipient: m.RecipientExternalID, RecipientName: m.RecipientName,
			Platform: m.Platform, Address: m.Address, Status: string(m.Status), Priority: string(m.Priority), Attempts: m.Attempts,
			MaxAttempts: m.MaxAttempts, SendAt: m.SendAt, NextAttemptAt: m.NextAttemptAt, ErrorClass: m.ErrorClass,
			LastError: m.LastError, CreatedAt: m.CreatedAt, SentAt: m.SentAt, DigestMessageID: m.DigestMessageID}
		if m.Status.Terminal() || m.Status == models.StatusSending {
			out[i].NextAttemptAt = nil
		}
	}
	c.JSON(http.StatusOK, gin.H{"messages": out, "next_cursor": next})
}

// apiMessageFilter reads GET /api/v1/messages's filters; a value that cannot match is a
// *kernel.FieldError naming it, where the console's form drops it with a note.
func (h *Handlers) apiMessageFilter(c *gin.Context) (models.MessageFilter, *models.MessageCursor, error) {
	var f models.MessageFilter
	oneOf := func(field string, allowed []string) (string, error) {
		v := c.Query(field)
		if v == "" || slices.Contains(allowed, v) {
			return v, nil
		}
		return "", kernel.Invalid(field, "api.list.one_of", "Values", strings.Join(allowed, ", "))
	}
	statuses := make([]string, len(models.AllStatuses))
	for i, s := range models.AllStatuses {
		statuses[i] = string(s)
	}
	status, err := oneOf("status", statuses)
	if err != nil {
		return f, nil, err
	}
	f.Status = models.Status(status)
	if f.Platform, err = oneOf("platform", channels.Platforms); err != nil {
		return f, nil, err
	}
	if f.ErrorClass, err = oneOf("error_class", errorClasses); err != nil {
		return f, nil, err
	}
	f.Recipient = strings.TrimSpace(c.Query("recipient"))
	if f.BatchID = strings.TrimSpace(c.Query("batch")); len(f.BatchID) > 36 {
		return f, nil, kernel.Invalid("batch", "api.list.too_long", "Max", 36)
	}
	if f.CreatedFrom, err = queryTime(c, "since"); err != nil {
		return f, nil, err
	}
	if f.CreatedBefore, err = queryTime(c, "until"); err != nil {
		return f, nil, err
	}
	var after *models.MessageCursor
	if cur := c.Query("cursor"); cur != "" {
		if after, err = models.ParseMessageCursor(cur); err != nil {
			return f, nil, kernel.Invalid("cursor", "api.list.cursor")
		}
	}
	return f, after, nil
}

// queryTime reads an RFC 3339 time from the query string; nil when it is not given.
func queryTime(c *gin.Context, field string) (*time.Time, error) {
	v := c.Query(field)
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, kernel.Invalid(field, "api.list.time")
	}
	return &t, nil
}
