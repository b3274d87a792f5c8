package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"herald/delivery"
	"herald/kernel"
	"herald/models"
	"herald/silence"
	"herald/views"
)

// Silences is the console's list of silences, in one state or all.
func (h *Handlers) Silences(c *gin.Context) {
	ctx := c.Request.Context()
	state := c.Query("state")
	list, err := h.Dispatch.Silences().Silences(ctx, actor(c), state)
	if _, bad := fieldErrors(c, err); bad {
		state = ""
		list, err = h.Dispatch.Silences().Silences(ctx, actor(c), "")
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	ids := make([]int64, len(list))
	for i := range list {
		ids[i] = list[i].ID
	}
	ever, holding, err := silence.Of(h.Store).HeldCounts(ctx, ids)
	if err != nil {
		h.fail(c, err)
		return
	}
	v := views.SilencesView{State: state, List: list, Ever: ever, Holding: holding, Now: kernel.Now(), Notice: h.notice(c),
		Next: map[int64][]delivery.Window{}}
	for i := range list {
		if list[i].Schedule == nil || list[i].State(v.Now) == delivery.SilenceExpired {
			continue
		}
		if v.Next[list[i].ID], err = h.Dispatch.Silences().NextOccurrences(ctx, &list[i], views.NextOccurrences); err != nil {
			h.fail(c, err)
			return
		}
	}
	if u := CurrentUser(c); u != nil {
		v.Me = u.Username
	}
	render(c, http.StatusOK, views.SilencesPage(page(c, tr(c, "silences.title"), "silences"), v))
}

// silenceFormOf reads the silence form: the matcher rows that name something, the
// times in the console's time zone, the comment and what happens at the end.
func silenceFormOf(c *gin.Context) views.SilenceForm {
	f := views.SilenceForm{StartsAt: strings.TrimSpace(c.PostForm("starts_at")), EndsAt: strings.TrimSpace(c.PostForm("ends_at")),
		Comment: c.PostForm("comment"), OnEnd: c.PostForm("on_end"), Recurring: c.PostForm("mode") == "recurring",
		Schedule: silence.Schedule{Days: strings.TrimSpace(c.PostForm("schedule_days")), Start: strings.TrimSpace(c.PostForm("schedule_start")),
			End: strings.TrimSpace(c.PostForm("schedule_end")), Timezone: strings.TrimSpace(c.PostForm("schedule_timezone"))}}
	for i := range views.SilenceFormRows {
		f.Rows[i] = delivery.Matcher{Name: c.PostForm(fmt.Sprintf("name_%d", i)), Value: c.PostForm(fmt.Sprintf("value_%d", i)),
			Regex: c.PostForm(fmt.Sprintf("regex_%d", i)) != "", Negate: c.PostForm(fmt.Sprintf("negate_%d", i)) != ""}
	}
	return f
}

// matchersOf returns the form's matchers and, for each, the row it came from.
func matchersOf(f views.SilenceForm) (matchers []delivery.Matcher, rows []int) {
	for i, m := range f.Rows {
		if m.Name == "" {
			continue
		}
		matchers, rows = append(matchers, m), append(rows, i)
	}
	return matchers, rows
}

// silenceInputOf turns the form into a silence; bad times are errors naming their field.
func (h *Handlers) silenceInputOf(f views.SilenceForm) (silence.SilenceInput, error) {
	in := silence.SilenceInput{Comment: f.Comment, OnEnd: f.OnEnd}
	in.Matchers, _ = matchersOf(f)
	if f.Recurring {
		schedule := f.Schedule
		in.Schedule = &schedule
	}
	for _, t := range []struct {
		field, value string
		to           **time.Time
	}{{"starts_at", f.StartsAt, &in.StartsAt}, {"ends_at", f.EndsAt, &in.EndsAt}} {
		if t.value == "" {
			continue
		}
		v, err := parseLocalTime(t.value, h.Location)
		if err != nil {
			return in, kernel.Invalid(t.field, "silences.check.time")
		}
		*t.to = &v
	}
	return in, nil
}

// silenceFormErrors places a validation error beside its field: a matcher's beside its
// row.
func silenceFormErrors(c *gin.Context, f views.SilenceForm, err error) (map[string]string, bool) {
	var fe *kernel.FieldError
	if !errors.As(err, &fe) {
		return nil, false
	}
	field := fe.Field
	if field == "silences" {
		field = "" // the caps on live silences: above the form
	}
	var k int
	var part string
	if n, _ := fmt.Sscanf(strings.Replace(field, "].", "] ", 1), "matchers[%d] %s", &k, &part); n == 2 {
		if _, rows := matchersOf(f); k < len(rows) {
			field = fmt.Sprintf("%s_%d", part, rows[k])
		}
	}
	return map[string]string{field: fe.In(c.Request.Context())}, true
}

// NewSilenceForm starts a silence: from now for two hours, releasing what it held.
func (h *Handlers) NewSilenceForm(c *gin.Context) {
	now := time.Now().In(h.Location)
	f := views.SilenceForm{StartsAt: now.Format("2006-01-02T15:04"), EndsAt: now.Add(2 * time.Hour).Format("2006-01-02T15:04"),
		OnEnd: delivery.OnEndRelease, Schedule: views.DefaultSchedule(h.Location)}
	h.renderSilenceForm(c, http.StatusOK, 0, f, nil)
}

// EditSilenceForm shows a silence to change.
func (h *Handlers) EditSilenceForm(c *gin.Context) {
	sil, ok := h.consoleSilence(c)
	if !ok {
		return
	}
	f := views.SilenceForm{StartsAt: sil.StartsAt.In(h.Location).Format("2006-01-02T15:04"),
		EndsAt: sil.EndsAt.In(h.Location).Format("2006-01-02T15:04"), Comment: sil.Comment, OnEnd: sil.OnEnd,
		Recurring: sil.Schedule != nil, Schedule: views.DefaultSchedule(h.Location)}
	if sil.Schedule != nil {
		f.Schedule = *sil.Schedule
	}
	copy(f.Rows[:], sil.Matchers)
	h.renderSilenceForm(c, http.StatusOK, sil.ID, f, nil)
}

// consoleSilence reads the silence the route's :id names; false after the 404 page.
func (h *Handlers) consoleSilence(c *gin.Context) (*silence.Silence, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	var sil *silence.Silence
	if err == nil {
		sil, err = h.Dispatch.Silences().Silence(c.Request.Context(), actor(c), id)
	}
	switch {
	case err == nil:
		return sil, true
	case errors.Is(err, strconv.ErrSyntax), errors.Is(err, strconv.ErrRange):
		ErrorPage(c, http.StatusNotFound, "silences.none")
	default:
		h.fail(c, err, saying(kernel.ErrNotFound, "silences.none"))
	}
	return nil, false
}

// CreateSilence saves a new silence.
func (h *Handlers) CreateSilence(c *gin.Context) {
	f := silenceFormOf(c)
	in, err := h.silenceInputOf(f)
	var sil *silence.Silence
	if err == nil {
		sil, err = h.Dispatch.Silences().CreateSilence(c.Request.Context(), actor(c), in)
	}
	h.afterSilenceSave(c, 0, f, sil, err)
}

// UpdateSilence saves a changed silence.
func (h *Handlers) UpdateSilence(c *gin.Context) {
	old, ok := h.consoleSilence(c)
	if !ok {
		return
	}
	f := silenceFormOf(c)
	in, err := h.silenceInputOf(f)
	var sil *silence.Silence
	if err == nil {
		sil, err = h.Dispatch.Silences().UpdateSilence(c.Request.Context(), actor(c), old.ID, in)
	}
	h.afterSilenceSave(c, old.ID, f, sil, err)
}

func (h *Handlers) afterSilenceSave(c *gin.Context, id int64, f views.SilenceForm, saved *silence.Silence, err error) {
	if errs, ok := silenceFormErrors(c, f, err); ok {
		h.renderSilenceForm(c, http.StatusUnprocessableEntity, id, f, errs)
		return
	}
	if err != nil {
		h.failOr(c, err, func(a answer) { h.renderSilenceForm(c, a.Status, id, f, a.errs()) },
			saying(kernel.ErrStateChanged, "silences.expired_meanwhile"))
		return
	}
	if saved.Approval == models.ApprovalAwaiting {
		h.redirectNotice(c, "/silences", "note", tr(c, "silences.notice.awaiting", "ID", saved.ID,
			"Reasons", reasonsText(c, saved.ApprovalReasons)))
		return
	}
	h.redirectNotice(c, "/silences", "saved", tr(c, "silences.name", "ID", saved.ID))
}

// reasonsText is why a silence waits for approval, in the reader's language.
func reasonsText(c *gin.Context, reasons []string) string {
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = views.SilenceReason(c.Request.Context(), r)
	}
	return strings.Join(out, tr(c, "silences.reason_separator"))
}

func (h *Handlers) renderSilenceForm(c *gin.Context, status int, id int64, f views.SilenceForm, errs map[string]string) {
	title := tr(c, "silences.new")
	if id != 0 {
		title = tr(c, "silences.edit_title", "ID", id)
	}
	f.Choices = map[string][]silence.Choice{}
	for _, name := range delivery.MatcherNames {
		choices, err := h.Dispatch.Silences().Choices(c.Request.Context(), name, "")
		if err != nil {
			h.fail(c, err)
			return
		}
		f.Choices[name] = choices
	}
	render(c, status, views.SilenceFormPage(page(c, title, "silences"), id, f, errs))
}

// PreviewSilence answers the form's preview: how many messages of the last 24 hours
// the matchers would have held (htmx swaps it in beside the buttons).
func (h *Handlers) PreviewSilence(c *gin.Context) {
	f := silenceFormOf(c)
	in, _ := h.silenceInputOf(f) // bad times are the save's to report
	p, err := h.Dispatch.Silences().PreviewSilence(c.Request.Context(), actor(c), in)
	if errs, ok := silenceFormErrors(c, f, err); ok {
		render(c, http.StatusUnprocessableEntity, views.SilencePreview(0, false, "", errs))
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	var reasons string
	if len(p.Reasons) > 0 {
		reasons = reasonsText(c, p.Reasons)
	}
	render(c, http.StatusOK, views.SilencePreview(p.Held, p.Complete, reasons, nil))
}

// ExpireSilence ends a silence now.
func (h *Handlers) ExpireSilence(c *gin.Context) {
	sil, ok := h.consoleSilence(c)
	if !ok {
		return
	}
	_, err := h.Dispatch.Silences().ExpireSilence(c.Request.Context(), actor(c), sil.ID)
	h.afterSilenceAction(c, sil.ID, "silences.notice.expired", err)
}

// ApproveSilence lets a silence awaiting approval take effect.
func (h *Handlers) ApproveSilence(c *gin.Context) { h.decideSilence(c, true) }

// RejectSilence refuses a silence awaiting approval, which expires it.
func (h *Handlers) RejectSilence(c *gin.Context) { h.decideSilence(c, false) }

func (h *Handlers) decideSilence(c *gin.Context, approve bool) {
	sil, ok := h.consoleSilence(c)
	if !ok {
		return
	}
	err := h.Dispatch.Silences().DecideSilence(c.Request.Context(), actor(c), sil.ID, approve)
	done := "silences.notice.approved"
	if !approve {
		done = "silences.notice.rejected"
	}
	h.afterSilenceAction(c, sil.ID, done, err)
}

// afterSilenceAction returns to the list with what happened.
func (h *Handlers) afterSilenceAction(c *gin.Context, id int64, done string, err error) {
	if err != nil {
		h.failOr(c, err, func(a answer) { h.redirectNotice(c, "/silences", "note", a.Message) },
			saying(kernel.ErrStateChanged, "silences.notice.changed", "ID", id))
		return
	}
	h.redirectNotice(c, "/silences", "note", tr(c, done, "ID", id))
}
