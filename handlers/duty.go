package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/directory"
	"herald/duty"
	"herald/i18n"
	"herald/kernel"
	"herald/models"
	"herald/views"
)

const (
	// dutyStaffLimit caps the head-office staff the duty page offers for rosters.
	dutyStaffLimit = 2000
	// emptyRosterDays is how far ahead the duty page looks for dates nobody is on duty.
	emptyRosterDays = 30
	// overrideDays is how far ahead the duty page lists overrides.
	overrideDays = 90
)

// Duty shows the duty schedule.
func (h *Handlers) Duty(c *gin.Context) {
	h.renderDuty(c, http.StatusOK, views.OverrideForm{}, views.HolidayForm{}, nil)
}

func (h *Handlers) renderDuty(c *gin.Context, status int, of views.OverrideForm, hf views.HolidayForm, errs map[string]string) {
	ctx := c.Request.Context()
	loc := h.Location
	today := time.Now().In(loc)
	d := views.Duty{OverrideForm: of, HolidayForm: hf, Notice: h.notice(c), Year: today.Year(), OverrideDays: overrideDays, Today: today.Format(time.DateOnly),
		NoticeAtHolidays: c.Query("year") != ""}
	var err error
	if d.Week, err = h.dutyWeek(c); err != nil {
		h.fail(c, err)
		return
	}
	if d.Rotations, err = h.rotationRows(c); err != nil {
		h.fail(c, err)
		return
	}
	var rf *models.ReminderConfig
	var rerrs map[string]string
	if f, ok := c.Get(reminderFormKey); ok {
		form := f.(reminderForm)
		rf, rerrs = &form.cfg, form.errs
	}
	if d.Reminder, err = h.reminderView(c, rf, rerrs); err != nil {
		h.fail(c, err)
		return
	}
	d.Roster = h.roster(ctx, c.DefaultQuery("date", today.Format(time.DateOnly)))
	from, to := today.Format(time.DateOnly), today.AddDate(0, 0, overrideDays).Format(time.DateOnly)
	overrides, err := h.Store.Duty().OverridesBetween(ctx, from, to)
	if err != nil {
		h.fail(c, err)
		return
	}
	ids := make([]int64, len(overrides))
	var swapIDs []int64
	for i, o := range overrides {
		ids[i] = o.RecipientID
		if o.SwapID != nil {
			swapIDs = append(swapIDs, *o.SwapID)
		}
	}
	swaps, err := h.Store.Duty().SwapsByID(ctx, swapIDs)
	if err != nil {
		h.fail(c, err)
		return
	}
	for _, sw := range swaps {
		ids = append(ids, sw.AID, sw.BID)
	}
	people, err := h.externalIDs(c, ids)
	if err != nil {
		h.fail(c, err)
		return
	}
	for _, o := range overrides {
		row := views.OverrideRow{Override: o, Person: people[o.RecipientID]}
		if o.SwapID != nil {
			if sw, ok := swaps[*o.SwapID]; ok {
				row.Swap = &views.SwapInfo{ID: sw.ID, Label: swapLabel(sw, people)}
			}
		}
		d.Overrides = append(d.Overrides, row)
	}
	if y, err := strconv.Atoi(c.Query("year")); err == nil && y >= 2000 && y <= 2100 {
		d.Year = y
	}
	if d.Holidays, err = h.Store.Duty().HolidaysBetween(ctx, fmt.Sprintf("%d-01-01", d.Year), fmt.Sprintf("%d-12-31", d.Year)); err != nil {
		h.fail(c, err)
		return
	}
	if d.HolidayYears, err = h.Store.Duty().HolidayYears(ctx); err != nil {
		h.fail(c, err)
		return
	}
	render(c, status, views.DutyPage(page(c, tr(c, "title.duty"), "duty"), d, errs))
}

// dutyWeek gathers the weekly roster grid and the coming dates nobody is on duty.
func (h *Handlers) dutyWeek(c *gin.Context) (views.DutyWeek, error) {
	ctx := c.Request.Context()
	week, err := h.Store.Duty().DutyWeek(ctx)
	if err != nil {
		return views.DutyWeek{}, err
	}
	var ids []int64
	for _, list := range week {
		ids = append(ids, list...)
	}
	people, err := h.externalIDs(c, ids)
	if err != nil {
		return views.DutyWeek{}, err
	}
	w := views.DutyWeek{CanEdit: CurrentUser(c).Role.Allows(access.RoleOperator), EmptyDays: emptyRosterDays}
	for day := 1; day <= 7; day++ {
		d := views.DutyDay{Weekday: day}
		for _, id := range week[day] {
			d.People = append(d.People, people[id])
		}
		slices.SortFunc(d.People, func(a, b directory.Recipient) int { return strings.Compare(a.Name, b.Name) })
		w.Days = append(w.Days, d)
	}
	if w.Staff, err = h.Store.Directory().HeadOfficeStaff(ctx, dutyStaffLimit); err != nil {
		return w, err
	}
	w.Empty, err = h.emptyRosterDates(ctx)
	return w, err
}

// emptyRosterDates lists the dates of the next emptyRosterDays days (today included)
// whose roster is empty. It applies the same rule as intake (duty.BuildRoster on the
// store's view of each date) without logging: the page shows the warning instead.
func (h *Handlers) emptyRosterDates(ctx context.Context) ([]views.EmptyDate, error) {
	today := time.Now().In(h.Location)
	from := today.Format(time.DateOnly)
	to := today.AddDate(0, 0, emptyRosterDays-1).Format(time.DateOnly)
	rosters, err := duty.Rosters(ctx, h.Store.Duty(), from, to)
	if err != nil {
		return nil, err
	}
	var out []views.EmptyDate
	for _, r := range rosters {
		if r.Unconfigured() {
			t, _ := time.Parse(time.DateOnly, r.Date)
			out = append(out, views.EmptyDate{Date: r.Date, Weekday: duty.Weekday(t), Holiday: r.Holiday})
		}
	}
	return out, nil
}

// roster works out who is on duty on a date, as intake would. Its error, if any, is in
// the language of ctx.
func (h *Handlers) roster(ctx context.Context, date string) views.Roster {
	loc := h.Location
	day, err := time.ParseInLocation(time.DateOnly, date, loc)
	if err != nil {
		return views.Roster{Date: date, Error: i18n.T(ctx, "duty.roster.bad_date")}
	}
	noon := day.Add(12 * time.Hour)
	r, err := h.Dispatch.Duty().RosterOn(ctx, noon)
	if err != nil {
		h.Log.Error("duty roster", "date", date, "error", err)
		return views.Roster{Date: date, Error: i18n.T(ctx, "duty.roster.unreadable")}
	}
	_, weekday := duty.DateOf(noon, loc)
	out := views.Roster{Date: r.Date, Weekday: weekday, Holiday: r.Holiday, Sources: r.Source}
	ids := make([]int64, 0, len(r.OnDuty))
	for id := range r.OnDuty {
		ids = append(ids, id)
	}
	people, err := h.Store.Directory().RecipientsByIDs(ctx, ids)
	if err != nil {
		h.Log.Error("duty roster", "date", date, "error", err)
		return views.Roster{Date: date, Error: i18n.T(ctx, "duty.roster.unreadable")}
	}
	slices.SortFunc(people, func(a, b directory.Recipient) int { return strings.Compare(a.Name, b.Name) })
	out.People = people
	return out
}

// DutyRoster renders who is on duty on ?date= (an htmx partial).
func (h *Handlers) DutyRoster(c *gin.Context) {
	r := h.roster(c.Request.Context(), c.DefaultQuery("date", time.Now().In(h.Location).Format(time.DateOnly)))
	status := http.StatusOK
	if r.Error != "" {
		status = http.StatusUnprocessableEntity
	}
	render(c, status, views.RosterResult(r))
}

// AddDutySlot puts a head-office person on a weekday's roster.
func (h *Handlers) AddDutySlot(c *gin.Context) {
	weekday, _ := strconv.Atoi(c.PostForm("weekday"))
	_, err := h.Dispatch.Duty().AddDutySlot(c.Request.Context(), actor(c), weekday, c.PostForm("recipient"))
	h.afterWeekChange(c, err)
}

// RemoveDutySlot takes a person off a weekday's roster.
func (h *Handlers) RemoveDutySlot(c *gin.Context) {
	weekday, _ := strconv.Atoi(c.PostForm("weekday"))
	h.afterWeekChange(c, h.Dispatch.Duty().RemoveDutySlot(c.Request.Context(), actor(c), weekday, c.PostForm("recipient")))
}

// afterWeekChange answers a roster edit: the grid for htmx, the page otherwise.
func (h *Handlers) afterWeekChange(c *gin.Context, err error) {
	var fe *kernel.FieldError
	if err != nil && !errors.As(err, &fe) {
		h.fail(c, err)
		return
	}
	if !isHTMX(c) {
		if fe != nil {
			h.renderDuty(c, http.StatusUnprocessableEntity, views.OverrideForm{}, views.HolidayForm{}, map[string]string{"": rosterEditError(c, fe)})
			return
		}
		c.Redirect(http.StatusSeeOther, "/duty")
		return
	}
	w, werr := h.dutyWeek(c)
	if werr != nil {
		h.fail(c, werr)
		return
	}
	status := http.StatusOK
	if fe != nil {
		w.Error, status = rosterEditError(c, fe), http.StatusUnprocessableEntity
	}
	render(c, status, views.DutyWeekGrid(w))
}

// rosterEditError is the sentence a failed roster edit shows above the grid: the
// field's name on the page ("Person", "Weekday"), then what is wrong with it.
func rosterEditError(c *gin.Context, fe *kernel.FieldError) string {
	field := fe.Field
	switch field {
	case "recipient":
		field = tr(c, "duty.col.person")
	case "weekday":
		field = tr(c, "duty.col.weekday")
	}
	return tr(c, "duty.week.error", "Field", field, "Error", fe.In(c.Request.Context()))
}

// SetDutyOverride adds or removes a person on one date.
func (h *Handlers) SetDutyOverride(c *gin.Context) {
	f := views.OverrideForm{Date: strings.TrimSpace(c.PostForm("date")), Recipient: c.PostForm("recipient"),
		Action: c.PostForm("action"), Note: strings.TrimSpace(c.PostForm("note"))}
	p, err := h.Dispatch.Duty().SetOverride(c.Request.Context(), actor(c), duty.Override{Date: f.Date, Recipient: f.Recipient, Action: f.Action, Note: f.Note})
	if errs, ok := fieldErrors(c, err); ok {
		h.renderDuty(c, http.StatusUnprocessableEntity, f, views.HolidayForm{}, errs)
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.redirectNotice(c, "/duty", "saved", tr(c, "duty.notice.override", "Name", p.Name, "Date", f.Date))
}

// DeleteDutyOverride removes a person's override on a date.
func (h *Handlers) DeleteDutyOverride(c *gin.Context) {
	date, ext := c.PostForm("date"), c.PostForm("recipient")
	p, err := h.Dispatch.Duty().DeleteOverride(c.Request.Context(), actor(c), date, ext)
	if _, invalid := fieldErrors(c, err); invalid {
		// A date or a person that cannot be has no override either.
		err = fmt.Errorf("handlers: override of %q on %q: %w", ext, date, kernel.ErrNotFound)
	}
	if err != nil {
		if a, ok := h.refusal(c, err, saying(kernel.ErrNotFound, "duty.no_override", "ID", ext, "Date", date)); ok {
			h.renderDuty(c, a.Status, views.OverrideForm{}, views.HolidayForm{}, a.errs())
		}
		return
	}
	h.redirectNotice(c, "/duty", "deleted", tr(c, "duty.notice.override", "Name", p.Name, "Date", date))
}

// holidayFrom reads one holiday entry from the form's strings.
func holidayFrom(date, kind, asWeekday, name string) duty.Holiday {
	hd := duty.Holiday{Date: strings.TrimSpace(date), Kind: strings.TrimSpace(kind), Name: strings.TrimSpace(name)}
	if n, err := strconv.Atoi(strings.TrimSpace(asWeekday)); err == nil {
		hd.AsWeekday = &n
	}
	return hd
}

// SetDutyHoliday records a day off or a make-up workday.
func (h *Handlers) SetDutyHoliday(c *gin.Context) {
	f := views.HolidayForm{Date: c.PostForm("date"), Kind: c.PostForm("kind"), AsWeekday: c.PostForm("as_weekday"), Name: c.PostForm("name")}
	hd := holidayFrom(f.Date, f.Kind, f.AsWeekday, f.Name)
	err := h.Dispatch.Duty().SetHoliday(c.Request.Context(), actor(c), hd)
	var fe *kernel.FieldError
	if errors.As(err, &fe) {
		h.renderDuty(c, http.StatusUnprocessableEntity, views.OverrideForm{}, f, map[string]string{"holiday." + fe.Field: fe.In(c.Request.Context())})
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	h.redirectNotice(c, holidaysPath(hd.Date), "saved", tr(c, "duty.notice.holiday", "Date", hd.Date))
}

// DeleteDutyHoliday removes the holiday entry of a date.
func (h *Handlers) DeleteDutyHoliday(c *gin.Context) {
	date := c.PostForm("date")
	if err := h.Dispatch.Duty().DeleteHoliday(c.Request.Context(), actor(c), date); err != nil {
		if a, ok := h.refusal(c, err, saying(kernel.ErrNotFound, "duty.no_holiday", "Date", date)); ok {
			h.renderDuty(c, a.Status, views.OverrideForm{}, views.HolidayForm{}, a.errs())
		}
		return
	}
	h.redirectNotice(c, holidaysPath(date), "deleted", tr(c, "duty.notice.holiday", "Date", date))
}

// holidaysPath is the duty page scrolled to the holidays of date's year. The page shows
// the notice of a holiday action there, above the list (views.Duty.NoticeAtHolidays):
// at the top of the page it would be out of sight.
func holidaysPath(date string) string {
	if len(date) >= 4 {
		return "/duty?year=" + date[:4] + "#holidays"
	}
	return "/duty#holidays"
}

// holidayColumns are the columns of a holiday CSV file.
var holidayColumns = []string{"date", "kind", "as_weekday", "name"}

// holidayImport is the holiday import form, in the language of the request.
func holidayImport(c *gin.Context) views.Import {
	return views.Import{Title: tr(c, "title.import_holidays"), Action: "/duty/holidays/import", Back: "/duty#holidays",
		Intro:    tr(c, "duty.import.intro"),
		Columns:  holidayColumns,
		Example:  strings.Join(holidayColumns, ",") + "\n" + tr(c, "duty.import.example"),
		Encoding: c.PostForm("encoding")}
}

// HolidayImportForm shows the holiday CSV import.
func (h *Handlers) HolidayImportForm(c *gin.Context) {
	render(c, http.StatusOK, views.ImportPage(page(c, tr(c, "title.import_holidays"), "duty"), holidayImport(c), nil))
}

// ImportHolidays previews a holiday CSV (mode=preview: every row checked, nothing
// written) or applies it (mode=apply: all rows in one transaction, or none).
func (h *Handlers) ImportHolidays(c *gin.Context) {
	runImport(h, c, csvImport[duty.Holiday]{
		form: holidayImport(c), page: page(c, tr(c, "title.import_holidays"), "duty"),
		columns: holidayColumns, required: []string{"date", "kind"}, maxRows: duty.MaxHolidays,
		item: func(r csvRow) (duty.Holiday, []string) {
			get := func(col string) string { return r.get(holidayColumns, col) }
			wd := get("as_weekday")
			hd := holidayFrom(get("date"), get("kind"), wd, get("name"))
			if _, err := strconv.Atoi(wd); wd != "" && err != nil {
				return hd, []string{fieldMessage(c, kernel.Invalid("as_weekday", "duty.weekday_number"))}
			}
			if err := duty.ValidateHoliday(&hd); err != nil {
				return hd, []string{fieldMessage(c, err)}
			}
			return hd, nil
		},
		key: func(hd duty.Holiday) string { return hd.Date },
		duplicate: func(date string, line int) string {
			return tr(c, "duty.import.duplicate", "Date", date, "Line", line)
		},
		effects: h.Store.Duty().HolidayEffects,
		summary: func(n map[string]int) string {
			return tr(c, "duty.import.effects", "Create", n[kernel.EffectCreate], "Update", n[kernel.EffectUpdate], "Unchanged", n[kernel.EffectUnchanged])
		},
		apply: func(list []duty.Holiday) error { return h.applyHolidays(c, list, duty.HolidaysFromCSV) },
	})
}

// applyHolidays saves holiday entries in one transaction, audited with what they did
// (from says which import: duty.HolidaysFromCSV …), and answers with the year's
// holidays.
func (h *Handlers) applyHolidays(c *gin.Context, list []duty.Holiday, from string) error {
	if err := h.Dispatch.Duty().ImportHolidays(c.Request.Context(), actor(c), list, from); err != nil {
		return err
	}
	first := slices.MinFunc(list, func(a, b duty.Holiday) int { return strings.Compare(a.Date, b.Date) })
	h.redirectNotice(c, holidaysPath(first.Date), "imported", i18n.N(c.Request.Context(), "duty.import.done", len(list)))
	return nil
}
