package handlers

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"herald/dispatch"
	"herald/models"
	"herald/views"
)

// composeListLimit caps the recipients the form lists.
const composeListLimit = 2000

// ComposeForm shows an empty compose form.
func (h *Handlers) ComposeForm(c *gin.Context) {
	h.renderCompose(c, http.StatusOK, views.ComposeForm{Priority: "normal"}, nil)
}

// composeFields are the fields the compose form shows errors beside; an error about
// any other field is shown above the form.
var composeFields = map[string]bool{"account": true, "template": true, "recipients": true, "content.subject": true,
	"content.text": true, "priority": true, "send_at": true, "variables": true}

// composeRequest reads the form into an intake request, the same one the API builds:
// people by id, whole departments (their active members), everyone on duty, a template
// with its variables or free text, and a send time in the console's time zone.
func (h *Handlers) composeRequest(c *gin.Context) (views.ComposeForm, dispatch.Request, map[string]string, error) {
	f := views.ComposeForm{
		Subject:      c.PostForm("content.subject"),
		Text:         c.PostForm("content.text"),
		Priority:     c.PostForm("priority"),
		Template:     c.PostForm("template"),
		ToOnDuty:     c.PostForm("to_on_duty") == "true",
		SendAt:       strings.TrimSpace(c.PostForm("send_at")),
		RecipientIDs: map[int64]bool{},
		Departments:  map[string]bool{},
		Variables:    map[string]string{},
	}
	errs := map[string]string{}
	var err error
	if f.AccountID, err = strconv.ParseInt(c.PostForm("account"), 10, 64); err != nil {
		errs["account"] = tr(c, "compose.pick_account")
	}
	var ids []int64
	for _, v := range c.PostFormArray("recipient") {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs["recipients"] = tr(c, "compose.not_recipient", "Value", strconv.Quote(v))
			continue
		}
		f.RecipientIDs[id] = true
		ids = append(ids, id)
	}
	var departments []string
	for _, d := range c.PostFormArray("department") {
		f.Departments[d] = true
		departments = append(departments, d)
	}
	members, err := h.Store.ActiveRecipientIDsInDepartments(c.Request.Context(), departments)
	if err != nil {
		return f, dispatch.Request{}, nil, err
	}
	ids = append(ids, members...)
	if f.Template != "" {
		// PostForm above parsed the body; variables.<name> are the template's inputs.
		for key, list := range c.Request.PostForm {
			if name, ok := strings.CutPrefix(key, "variables."); ok && len(list) > 0 {
				f.Variables[name] = list[0]
			}
		}
	}
	req := dispatch.Request{Source: "console", Actor: CurrentUser(c).Username, AccountID: f.AccountID, RecipientIDs: ids,
		ToOnDuty: f.ToOnDuty, Template: f.Template, Subject: f.Subject, Text: f.Text, Priority: f.Priority}
	if f.Template != "" {
		req.Variables = f.Variables
	}
	if f.SendAt != "" {
		t, err := parseLocalTime(f.SendAt, h.Dispatch.Location)
		if err != nil {
			errs["send_at"] = tr(c, "compose.bad_send_at")
		}
		req.SendAt = &t
	}
	return f, req, errs, nil
}

// parseLocalTime reads a datetime-local value in the console's time zone.
func parseLocalTime(s string, loc *time.Location) (time.Time, error) {
	t, err := time.ParseInLocation("2006-01-02T15:04", s, loc)
	if err != nil {
		t, err = time.ParseInLocation("2006-01-02T15:04:05", s, loc)
	}
	return t, err
}

// composeErrors places an intake validation error beside its field, or above the form.
func composeErrors(c *gin.Context, err error) (map[string]string, bool) {
	var fe *models.FieldError
	if !errors.As(err, &fe) {
		return nil, false
	}
	field := fe.Field
	if field == "platform" {
		field = "account"
	}
	if composeFields[field] || strings.HasPrefix(field, "variables.") {
		return map[string]string{field: fe.In(c.Request.Context())}, true
	}
	return map[string]string{"": composeFieldError(c, fe.Field, fe.In(c.Request.Context()))}, true
}

// composeFieldError is a validation message with the field it is about, named as the
// form names it, for errors shown apart from their field.
func composeFieldError(c *gin.Context, field, message string) string {
	label := field
	if name, ok := strings.CutPrefix(field, "variables."); ok {
		label = name
	} else if composeLabeled[field] {
		label = tr(c, "compose.field."+strings.ReplaceAll(field, ".", "_"))
	}
	return tr(c, "compose.field_error", "Field", label, "Message", message)
}

// composeLabeled are the fields the compose catalog names: compose.field.<field>, with
// dots as underscores.
var composeLabeled = map[string]bool{"account": true, "platform": true, "template": true, "recipients": true,
	"content": true, "content.subject": true, "content.text": true, "priority": true, "send_at": true, "variables": true,
	"idempotency_key": true}

// Compose submits the form through dispatch and shows the new batch.
func (h *Handlers) Compose(c *gin.Context) {
	f, req, errs, err := h.composeRequest(c)
	if err != nil {
		h.serverError(c, err)
		return
	}
	if len(errs) > 0 {
		h.renderCompose(c, http.StatusUnprocessableEntity, f, errs)
		return
	}
	// Intake writes the audit entry in the batch's own transaction.
	req.AuditIP = c.ClientIP()
	res, err := h.Dispatch.Submit(c.Request.Context(), req)
	if fe, ok := composeErrors(c, err); ok {
		h.renderCompose(c, http.StatusUnprocessableEntity, f, fe)
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/batches/"+res.Batch.ID)
}

// ComposePreview shows who the form would reach, and who not and why, from dispatch's
// plan: nothing is written (an htmx partial).
func (h *Handlers) ComposePreview(c *gin.Context) {
	ctx := c.Request.Context()
	_, req, errs, err := h.composeRequest(c)
	if err != nil {
		h.serverError(c, err)
		return
	}
	var v views.ComposePreview
	for field, msg := range errs {
		v.Errors = append(v.Errors, composeFieldError(c, field, msg))
	}
	slices.Sort(v.Errors)
	if len(v.Errors) > 0 {
		render(c, http.StatusUnprocessableEntity, views.ComposePreviewPanel(v))
		return
	}
	res, err := h.Dispatch.Plan(ctx, req)
	var fe *models.FieldError
	if errors.As(err, &fe) {
		v.Errors = []string{composeFieldError(c, fe.Field, fe.In(ctx))}
		render(c, http.StatusUnprocessableEntity, views.ComposePreviewPanel(v))
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	ids := make([]int64, len(res.Messages))
	v.Addresses = map[int64]string{}
	for i, m := range res.Messages {
		ids[i] = m.RecipientID
		v.Addresses[m.RecipientID] = m.Address
	}
	if v.Receive, err = h.Store.RecipientsByIDs(ctx, ids); err != nil {
		h.serverError(c, err)
		return
	}
	slices.SortFunc(v.Receive, func(a, b models.Recipient) int { return strings.Compare(a.Name, b.Name) })
	v.Skipped, v.Rejected, v.Platform = res.Skipped, res.Rejected, res.Batch.Platform
	if res.Roster != nil {
		v.Date, v.NoDuty = res.Roster.Date, res.Roster.Empty()
	}
	v.SendAt = req.SendAt
	render(c, http.StatusOK, views.ComposePreviewPanel(v))
}

// ComposeContent renders the content fields for ?template= (an htmx partial): the
// template's variables, or subject and text for free text.
func (h *Handlers) ComposeContent(c *gin.Context) {
	t, err := h.chosenTemplate(c, c.Query("template"))
	if err != nil {
		h.serverError(c, err)
		return
	}
	render(c, http.StatusOK, views.ComposeContent(views.ComposeForm{Template: c.Query("template")}, t, nil))
}

// chosenTemplate loads the named template; an empty or unknown name is free text.
func (h *Handlers) chosenTemplate(c *gin.Context, name string) (*models.Template, error) {
	if name == "" {
		return nil, nil
	}
	t, err := h.Store.TemplateByName(c.Request.Context(), name)
	if isNotFound(err) {
		return nil, nil
	}
	return t, err
}

func (h *Handlers) renderCompose(c *gin.Context, status int, f views.ComposeForm, errs map[string]string) {
	ctx := c.Request.Context()
	v := views.Compose{Form: f, TimeZone: h.Dispatch.Location.String()}
	var err error
	if v.Accounts, err = h.Store.EnabledAccounts(ctx); err != nil {
		h.serverError(c, err)
		return
	}
	if v.People, err = h.Store.ActiveRecipients(ctx, composeListLimit); err != nil {
		h.serverError(c, err)
		return
	}
	if v.Departments, err = h.Store.Departments(ctx); err != nil {
		h.serverError(c, err)
		return
	}
	if v.Templates, err = h.Store.Templates(ctx); err != nil {
		h.serverError(c, err)
		return
	}
	if v.Chosen, err = h.chosenTemplate(c, f.Template); err != nil {
		h.serverError(c, err)
		return
	}
	if v.Form.AccountID == 0 {
		for _, a := range v.Accounts {
			if a.IsDefault {
				v.Form.AccountID = a.ID
				break
			}
		}
	}
	render(c, status, views.ComposePage(page(c, tr(c, "title.compose"), "compose"), v, errs))
}

// batchListLimit caps the messages a batch page lists.
const batchListLimit = 1000

// Batch shows one batch with live progress.
func (h *Handlers) Batch(c *gin.Context) {
	v, ok := h.batchView(c)
	if ok {
		render(c, http.StatusOK, views.BatchPage(page(c, tr(c, "title.batch"), ""), v))
	}
}

// BatchProgress renders the live part of the batch page (an htmx partial).
func (h *Handlers) BatchProgress(c *gin.Context) {
	v, ok := h.batchView(c)
	if ok {
		render(c, http.StatusOK, views.BatchProgress(v))
	}
}

func (h *Handlers) batchView(c *gin.Context) (views.BatchView, bool) {
	ctx := c.Request.Context()
	id := c.Param("id")
	b, err := h.Store.BatchByID(ctx, id)
	if isNotFound(err) {
		ErrorPage(c, http.StatusNotFound, "error.no_batch", "ID", id)
		return views.BatchView{}, false
	}
	if err != nil {
		h.serverError(c, err)
		return views.BatchView{}, false
	}
	// Counts first, then the rows: the counts decide when the page stops polling, so the
	// rows of its last render are read after every message was already final and
	// cannot show a state older than the counts.
	counts, err := h.Store.BatchStatusCounts(ctx, id)
	if err != nil {
		h.serverError(c, err)
		return views.BatchView{}, false
	}
	msgs, err := h.Store.MessagesOfBatch(ctx, id, batchListLimit)
	if err != nil {
		h.serverError(c, err)
		return views.BatchView{}, false
	}
	return views.BatchView{Batch: b, Messages: msgs, Counts: counts}, true
}
