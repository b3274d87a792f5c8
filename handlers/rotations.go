package handlers

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"herald/duty"
	"herald/kernel"
	"herald/views"
)

// rotationRows shows the rotations with their turns by name and today's turn.
func (h *Handlers) rotationRows(c *gin.Context) ([]views.RotationRow, error) {
	ctx := c.Request.Context()
	list, err := h.Store.Duty().Rotations(ctx)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	specs, err := h.Store.Duty().RotationSpecs(ctx, list)
	if err != nil {
		return nil, err
	}
	people, err := h.externalIDs(c, duty.RotationMembers(list))
	if err != nil {
		return nil, err
	}
	names := func(group []int64) string {
		out := make([]string, len(group))
		for i, id := range group {
			out[i] = views.PersonName(c.Request.Context(), people[id].Name, people[id].ExternalID)
		}
		return strings.Join(out, " + ")
	}
	today, err := h.Store.Duty().DutyDayOf(ctx, time.Now().In(h.Location).Format(time.DateOnly))
	if err != nil {
		return nil, err
	}
	rows := make([]views.RotationRow, len(list))
	for i, r := range list {
		rows[i].Spec = specs[i]
		for _, g := range r.Members {
			rows[i].Turns = append(rows[i].Turns, names(g))
		}
		for _, t := range today.Rotations {
			if t.Name == r.Name {
				rows[i].Today = names(t.Members)
			}
		}
	}
	return rows, nil
}

// rotationSpecOf turns the form into a spec, as the API takes it: each turn its people
// joined with "+" (a turn nobody was picked for is refused beside it; none picked at
// all, as a rotation without members).
func rotationSpecOf(f views.RotationForm) (duty.RotationSpec, error) {
	spec := duty.RotationSpec{Name: f.Name, Start: f.Start, Covers: f.Covers}
	if f.Covers == duty.CoversWeekdays {
		spec.Weekdays = f.Weekdays
	}
	if slices.ContainsFunc(f.Turns, func(t []string) bool { return len(t) > 0 }) {
		for _, turn := range f.Turns {
			spec.Members = append(spec.Members, strings.Join(turn, "+"))
		}
	}
	n, err := strconv.Atoi(f.TurnDays)
	if err != nil {
		return spec, kernel.Invalid("turn_days", "rotation.invalid.turn_days", "Max", duty.MaxTurnDays)
	}
	spec.TurnDays = n
	return spec, nil
}

// rotationFormErrors places a rotation's validation error beside its form field.
func rotationFormErrors(c *gin.Context, err error) (map[string]string, bool) {
	var fe *kernel.FieldError
	if !errors.As(err, &fe) {
		return nil, false
	}
	field := fe.Field
	if i := strings.IndexByte(field, '['); i > 0 && field[:i] != "members" {
		field = field[:i]
	}
	return map[string]string{field: fe.In(c.Request.Context())}, true
}

func (h *Handlers) renderRotationForm(c *gin.Context, status int, f views.RotationForm, errs map[string]string) {
	if err := h.fillRotationForm(c, &f); err != nil {
		h.fail(c, err)
		return
	}
	title := tr(c, "rotation.new_title")
	if f.Original != "" {
		title = tr(c, "rotation.edit_title", "Name", f.Original)
	}
	render(c, status, views.RotationFormPage(page(c, title, "duty"), f, errs))
}

// NewRotationForm starts a rotation: one day each over workdays, from tomorrow.
func (h *Handlers) NewRotationForm(c *gin.Context) {
	tomorrow := time.Now().In(h.Location).AddDate(0, 0, 1).Format(time.DateOnly)
	h.renderRotationForm(c, http.StatusOK, views.RotationForm{Turns: [][]string{{}}, Start: tomorrow, TurnDays: "1", Covers: duty.CoversWorkdays}, nil)
}

// CreateRotation saves a new rotation.
func (h *Handlers) CreateRotation(c *gin.Context) {
	f := rotationFormOf(c, "")
	spec, err := rotationSpecOf(f)
	if err == nil {
		spec, err = h.Dispatch.Duty().CreateRotation(c.Request.Context(), actor(c), spec)
	}
	if errs, ok := rotationFormErrors(c, err); ok {
		h.renderRotationForm(c, http.StatusUnprocessableEntity, f, errs)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.redirectNotice(c, "/duty#rotations", "saved", tr(c, "rotation.notice", "Name", spec.Name))
}

// EditRotationForm shows a rotation to change.
func (h *Handlers) EditRotationForm(c *gin.Context) {
	ctx := c.Request.Context()
	r, err := h.Store.Duty().RotationByName(ctx, c.Param("name"))
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_rotation", "Name", c.Param("name")))
		return
	}
	specs, err := h.Store.Duty().RotationSpecs(ctx, []duty.Rotation{*r})
	if err != nil {
		h.fail(c, err)
		return
	}
	s := specs[0]
	h.renderRotationForm(c, http.StatusOK, views.RotationForm{Original: r.Name, Name: s.Name, Turns: turnsOf(s.Members),
		Start: s.Start, TurnDays: strconv.Itoa(s.TurnDays), Covers: s.Covers, Weekdays: s.Weekdays}, nil)
}

// turnsOf splits a spec's members into turns: each turn's people were joined with "+".
func turnsOf(members []string) [][]string {
	out := make([][]string, len(members))
	for i, m := range members {
		out[i] = strings.Split(m, "+")
	}
	return out
}

// UpdateRotation saves a changed rotation (it may be renamed).
func (h *Handlers) UpdateRotation(c *gin.Context) {
	f := rotationFormOf(c, c.Param("name"))
	spec, err := rotationSpecOf(f)
	if err == nil {
		spec, err = h.Dispatch.Duty().UpdateRotation(c.Request.Context(), actor(c), f.Original, spec)
	}
	if errs, ok := rotationFormErrors(c, err); ok {
		h.renderRotationForm(c, http.StatusUnprocessableEntity, f, errs)
		return
	}
	if err != nil {
		h.failOr(c, err, func(a answer) {
			if errors.Is(err, duty.ErrRotationInUse) {
				a.Field = "name" // the name the policies go on using
			}
			h.renderRotationForm(c, a.Status, f, a.errs())
		}, saying(kernel.ErrNotFound, "error.no_rotation", "Name", f.Original))
		return
	}
	h.redirectNotice(c, "/duty#rotations", "saved", tr(c, "rotation.notice", "Name", spec.Name))
}

// DeleteRotation removes a rotation.
func (h *Handlers) DeleteRotation(c *gin.Context) {
	name := c.Param("name")
	if err := h.Dispatch.Duty().DeleteRotation(c.Request.Context(), actor(c), name); err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "error.no_rotation", "Name", name))
		return
	}
	h.redirectNotice(c, "/duty#rotations", "deleted", tr(c, "rotation.notice", "Name", name))
}

// DutyCalendar is the month view of the duty calendar (?month=YYYY-MM).
func (h *Handlers) DutyCalendar(c *gin.Context) {
	first, rosters, err := h.monthRosters(c)
	if _, bad := fieldErrors(c, err); bad {
		c.Redirect(http.StatusSeeOther, "/duty/calendar")
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	people, err := h.rosterPeople(c, rosters)
	if err != nil {
		h.fail(c, err)
		return
	}
	today := time.Now().In(h.Location).Format(time.DateOnly)
	cal := views.Calendar{Month: first.Format("2006-01"), Prev: first.AddDate(0, -1, 0).Format("2006-01"),
		Next: first.AddDate(0, 1, 0).Format("2006-01"), Lead: duty.Weekday(first) - 1}
	for i, r := range rosters {
		day := first.AddDate(0, 0, i)
		d := views.CalendarDay{Date: r.Date, Day: day.Day(), Weekday: duty.Weekday(day), Kind: r.Kind, Holiday: r.Holiday,
			Warning: r.Unconfigured(), Today: r.Date == today}
		for _, p := range onDuty(r, people) {
			d.People = append(d.People, views.CalendarPerson{Name: p.Name, ExternalID: p.ExternalID, Source: p.Source})
		}
		cal.Days = append(cal.Days, d)
	}
	render(c, http.StatusOK, views.DutyCalendarPage(page(c, tr(c, "calendar.heading")+" "+cal.Month, "duty"), cal))
}
