package handlers

import (
	"errors"
	"herald/chatgroups"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"herald/channels"
	"herald/directory"
	"herald/dispatch"
	"herald/kernel"
	"herald/models"
	"herald/recall"
	"herald/templates"
	"herald/views"
)

// composeListLimit caps the recipients the form lists; a search narrows the list.
const composeListLimit = 2000

// maxPeopleQuery caps the search of people, in characters.
const maxPeopleQuery = 100

// composeSearchLimit caps the active recipients a search looks through: as many as one
// request may name.
const composeSearchLimit = directory.MaxRecipients

// ComposeForm shows an empty compose form; ?q= narrows its list of people (the search
// box without htmx).
func (h *Handlers) ComposeForm(c *gin.Context) {
	h.renderCompose(c, http.StatusOK, views.ComposeForm{Priority: models.PriorityNormal, Query: c.Query("q")}, nil)
}

// ComposePeople renders the compose form's list of people for ?q= (an htmx partial):
// those the search finds, sorted by name, and still every person already ticked
// (?recipient=), so that a search never drops a choice.
func (h *Handlers) ComposePeople(c *gin.Context) {
	selected := map[int64]bool{}
	for _, v := range c.QueryArray("recipient") {
		if id, err := strconv.ParseInt(v, 10, 64); err == nil {
			selected[id] = true
		}
	}
	picker, err := h.peoplePicker(c, c.Query("q"), selected)
	if err != nil {
		h.fail(c, err)
		return
	}
	render(c, http.StatusOK, views.ComposePeople(picker))
}

// peoplePicker finds the active people a search names (directory.PersonMatches), in name
// order (Chinese names by pinyin), at most composeListLimit of them, and the ticked
// people the list leaves out.
func (h *Handlers) peoplePicker(c *gin.Context, query string, selected map[int64]bool) (views.PeoplePicker, error) {
	ctx := c.Request.Context()
	query = strings.TrimSpace(query)
	if r := []rune(query); len(r) > maxPeopleQuery {
		query = string(r[:maxPeopleQuery])
	}
	v := views.PeoplePicker{Query: query, Selected: selected}
	all, err := h.Store.Directory().ActiveRecipients(ctx, composeSearchLimit)
	if err != nil {
		return v, err
	}
	v.Total = len(all)
	v.People = directory.FindPeople(all, query)
	v.Matches = len(v.People)
	if len(v.People) > composeListLimit {
		v.People = v.People[:composeListLimit]
	}
	shown := make(map[int64]bool, len(v.People))
	for _, p := range v.People {
		shown[p.ID] = true
	}
	var missing []int64
	for id, ok := range selected {
		if ok && !shown[id] {
			missing = append(missing, id)
		}
	}
	if v.Chosen, err = h.Store.Directory().RecipientsByIDs(ctx, missing); err != nil {
		return v, err
	}
	directory.SortRecipientsByName(v.Chosen)
	return v, nil
}

// composeFields are the fields the compose form shows errors beside; an error about
// any other field is shown above the form.
var composeFields = map[string]bool{"account": true, "template": true, "recipients": true, "content.subject": true,
	"content.text": true, "priority": true, "send_at": true, "variables": true,
	"digest.key": true, "digest.window": true, "digest.max": true}

// composeRequest reads the form into an intake request, the same one the API builds:
// people by id, whole departments and branches (their active members, which dispatch
// finds), everyone on duty, a template with its variables or free text, and a send time
// in the console's time zone.
func (h *Handlers) composeRequest(c *gin.Context) (views.ComposeForm, dispatch.Request, map[string]string, error) {
	f := views.ComposeForm{
		Subject:      c.PostForm("content.subject"),
		Text:         c.PostForm("content.text"),
		Priority:     models.Priority(c.PostForm("priority")),
		Template:     c.PostForm("template"),
		ToOnDuty:     c.PostForm("to_on_duty") == "true",
		SendAt:       strings.TrimSpace(c.PostForm("send_at")),
		RecipientIDs: map[int64]bool{},
		Departments:  map[string]bool{},
		Branches:     map[string]bool{},
		Groups:       map[string]bool{},
		Variables:    map[string]string{},
		AckPolicy:    strings.TrimSpace(c.PostForm("ack.policy")),
		Digest:       digestForm(c),
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
	// Whole departments and branches: dispatch adds their active members.
	departments, branches := c.PostFormArray("department"), c.PostFormArray("branch")
	for _, d := range departments {
		f.Departments[d] = true
	}
	for _, b := range branches {
		f.Branches[b] = true
	}
	// Chat groups: one post to each, @-ing as each group says.
	groups := c.PostFormArray("group")
	for _, g := range groups {
		f.Groups[g] = true
	}
	if f.Template != "" {
		// PostForm above parsed the body; variables.<name> are the template's inputs.
		for key, list := range c.Request.PostForm {
			if name, ok := strings.CutPrefix(key, "variables."); ok && len(list) > 0 {
				f.Variables[name] = list[0]
			}
		}
	}
	req := dispatch.Request{Source: "console", Actor: CurrentUser(c).Username, Makers: []string{CurrentUser(c).Username}, AccountID: f.AccountID, RecipientIDs: ids,
		Departments: departments, Branches: branches, Groups: groups, ToOnDuty: f.ToOnDuty, Template: f.Template, Subject: f.Subject, Text: f.Text, Priority: f.Priority}
	if f.Template != "" {
		req.Variables = f.Variables
	}
	if f.AckPolicy != "" {
		req.Ack = &dispatch.AckRequest{Policy: f.AckPolicy}
	}
	req.Digest = digestRequest(f.Digest)
	if f.SendAt != "" {
		t, err := parseLocalTime(f.SendAt, h.Location)
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
	var fe *kernel.FieldError
	if !errors.As(err, &fe) {
		return nil, false
	}
	field := fe.Field
	if field == "platform" {
		field = "account"
	}
	if composeFields[field] || strings.HasPrefix(field, "variables.") {
		return map[string]string{field: composeMessage(c, fe)}, true
	}
	return map[string]string{"": composeFieldError(c, fe.Field, composeMessage(c, fe))}, true
}

// composeWording words some of intake's messages as the form shows them: the API's
// say what to send ("set to_on_duty"), the form's say what to pick.
var composeWording = map[string]string{
	"compose.check.recipients_none":   "compose.form_check.recipients_none",
	"compose.check.platform_required": "compose.pick_account",
}

// composeMessage is a validation message as the compose form says it.
func composeMessage(c *gin.Context, fe *kernel.FieldError) string {
	if key, ok := composeWording[fe.Key]; ok {
		return tr(c, key, fe.Args...)
	}
	return fe.In(c.Request.Context())
}

// composeFieldError is a validation message with the field it is about, named as the
// form names it, for errors shown apart from their field.
func composeFieldError(c *gin.Context, field, message string) string {
	label := field
	if name, ok := strings.CutPrefix(field, "variables."); ok {
		label = name
	} else if composeLabeled[field] {
		label = tr(c, "compose.field."+strings.ReplaceAll(field, ".", "_"))
	} else if strings.HasPrefix(field, "recipients[") {
		label = tr(c, "compose.field.recipients")
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
		h.fail(c, err)
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
		h.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/batches/"+res.Batch.ID)
}

// ComposePreview shows who the form would reach, and who not and why, from dispatch's
// plan, and the message as one of them would receive it (?preview_for=, a recipient id;
// the first by name without it): nothing is written (an htmx partial).
func (h *Handlers) ComposePreview(c *gin.Context) {
	ctx := c.Request.Context()
	_, req, errs, err := h.composeRequest(c)
	if err != nil {
		h.fail(c, err)
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
	var fe *kernel.FieldError
	if errors.As(err, &fe) {
		v.Errors = []string{composeFieldError(c, fe.Field, composeMessage(c, fe))}
		render(c, http.StatusUnprocessableEntity, views.ComposePreviewPanel(v))
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	ids := make([]int64, len(res.Messages))
	v.Messages = make(map[int64]models.Message, len(res.Messages))
	for i, m := range res.Messages {
		ids[i] = m.RecipientID
		v.Messages[m.RecipientID] = m
	}
	if v.Receive, err = h.Store.Directory().RecipientsByIDs(ctx, ids); err != nil {
		h.fail(c, err)
		return
	}
	directory.SortRecipientsByName(v.Receive)
	if len(v.Receive) > 0 {
		v.For = v.Receive[0].ID
		if id, err := strconv.ParseInt(c.PostForm("preview_for"), 10, 64); err == nil {
			if _, ok := v.Messages[id]; ok {
				v.For = id
			}
		}
	}
	if v.Skipped, v.Rejected, err = h.reasonLines(c, res.Skipped, res.Rejected); err != nil {
		h.fail(c, err)
		return
	}
	v.Platform = res.Batch.Platform
	if res.Roster != nil {
		v.Date, v.NoDuty, v.DayOff = res.Roster.Date, res.Roster.Unconfigured(), res.Roster.Empty() && res.Roster.DayOff()
	}
	v.SendAt = req.SendAt
	wait, err := h.Dispatch.Waits(ctx, res)
	if err != nil {
		h.fail(c, err)
		return
	}
	v.Approval, v.Threshold, v.QuietUntil, v.QuietAccount = wait.Approval, wait.Threshold, wait.QuietUntil, wait.Account
	v.Silences, v.Silenced, v.Digest, v.Digested = wait.Silences, wait.Silenced, wait.Digest, wait.Digested
	render(c, http.StatusOK, views.ComposePreviewPanel(v))
}

// reasonLines names the people of skipped and rejected reasons (an unknown one keeps
// the id it was asked for), so that the console shows who, not just their codes.
func (h *Handlers) reasonLines(c *gin.Context, skipped, rejected models.Reasons) ([]views.ReasonLine, []views.ReasonLine, error) {
	ext := make([]string, 0, len(skipped)+len(rejected))
	for _, r := range slices.Concat(skipped, rejected) {
		// An unknown recipient has no name; the console asks by database id, which
		// another person's external id could equal.
		if r.Reason != dispatch.ReasonUnknownRecipient {
			ext = append(ext, r.Recipient)
		}
	}
	names, err := h.Store.Directory().RecipientNames(c.Request.Context(), ext)
	if err != nil {
		return nil, nil, err
	}
	lines := func(rs models.Reasons) []views.ReasonLine {
		out := make([]views.ReasonLine, len(rs))
		for i, r := range rs {
			out[i] = views.ReasonLine{ExternalID: r.Recipient, Reason: r.Reason}
			if r.Reason != dispatch.ReasonUnknownRecipient {
				out[i].Name = names[r.Recipient]
			}
		}
		// Named people by name, then the unknown ids as asked.
		slices.SortStableFunc(out, func(a, b views.ReasonLine) int {
			switch {
			case a.Name == "" && b.Name == "":
				return 0
			case a.Name == "":
				return 1
			case b.Name == "":
				return -1
			}
			return directory.CompareNames(a.Name, b.Name)
		})
		return out
	}
	return lines(skipped), lines(rejected), nil
}

// ComposeContent renders the content fields for ?template= (an htmx partial): the
// template's variables, or subject and text for free text.
func (h *Handlers) ComposeContent(c *gin.Context) {
	t, err := h.chosenTemplate(c, c.Query("template"))
	if err != nil {
		h.fail(c, err)
		return
	}
	render(c, http.StatusOK, views.ComposeContent(views.ComposeForm{Template: c.Query("template")}, t, nil))
}

// chosenTemplate loads the named template; an empty or unknown name is free text.
func (h *Handlers) chosenTemplate(c *gin.Context, name string) (*templates.Template, error) {
	if name == "" {
		return nil, nil
	}
	t, err := h.Store.Templates().TemplateByName(c.Request.Context(), name)
	if isNotFound(err) {
		return nil, nil
	}
	return t, err
}

func (h *Handlers) renderCompose(c *gin.Context, status int, f views.ComposeForm, errs map[string]string) {
	ctx := c.Request.Context()
	v := views.Compose{Form: f, TimeZone: h.Location.String()}
	var err error
	if v.Accounts, err = h.Store.Sending().EnabledAccounts(ctx); err != nil {
		h.fail(c, err)
		return
	}
	if v.People, err = h.peoplePicker(c, f.Query, f.RecipientIDs); err != nil {
		h.fail(c, err)
		return
	}
	if v.Departments, err = h.Store.Directory().Departments(ctx); err != nil {
		h.fail(c, err)
		return
	}
	if v.Branches, err = h.Store.Directory().ActiveBranches(ctx); err != nil {
		h.fail(c, err)
		return
	}
	// Chinese names by pinyin, as people are.
	slices.SortFunc(v.Departments, directory.CompareNames)
	slices.SortFunc(v.Branches, directory.CompareNames)
	if v.ChatGroups, err = h.chatGroups().Groups(ctx, chatgroups.Filter{}); err != nil {
		h.fail(c, err)
		return
	}
	if v.Templates, err = h.Store.Templates().Templates(ctx); err != nil {
		h.fail(c, err)
		return
	}
	if v.Chosen, err = h.chosenTemplate(c, f.Template); err != nil {
		h.fail(c, err)
		return
	}
	if v.Policies, err = h.Dispatch.Alerts().Policies(ctx); err != nil {
		h.fail(c, err)
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
	if !ok {
		return
	}
	// Who was not sent to, by name: only the full page shows them, not its live part.
	var err error
	if v.Skipped, v.Rejected, err = h.reasonLines(c, v.Batch.Skipped, v.Batch.Rejected); err != nil {
		h.fail(c, err)
		return
	}
	v.Decision.Notice = h.notice(c)
	render(c, http.StatusOK, views.BatchPage(page(c, tr(c, "title.batch"), ""), v))
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
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_batch", "ID", id))
		return views.BatchView{}, false
	}
	// Counts first, then the rows: the counts decide when the page stops polling, so the
	// rows of its last render are read after every message was already final and
	// cannot show a state older than the counts.
	counts, err := h.Store.BatchStatusCounts(ctx, id)
	if err != nil {
		h.fail(c, err)
		return views.BatchView{}, false
	}
	msgs, err := h.Store.MessagesOfBatch(ctx, id, batchListLimit)
	if err != nil {
		h.fail(c, err)
		return views.BatchView{}, false
	}
	slices.SortStableFunc(msgs, func(a, b models.BatchMessage) int { return directory.CompareNames(a.RecipientName, b.RecipientName) })
	v := views.BatchView{Now: time.Now(), CanOperate: canOperate(c), Recalls: channels.RecallWindow(b.Platform) > 0, Batch: b, Messages: msgs, Counts: counts.ByStatus, Reached: counts.Reached, Falling: counts.Falling}
	if v.Recall, err = recall.Of(h.Store).LatestRecallRequest(ctx, id); err != nil {
		h.fail(c, err)
		return views.BatchView{}, false
	}
	if counts.ByStatus[models.StatusPending] > 0 {
		if v.QuietWaiting, err = h.Store.QuietWaiting(ctx, id); err != nil {
			h.fail(c, err)
			return views.BatchView{}, false
		}
	}
	return v, true
}
