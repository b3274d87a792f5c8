package handlers

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"herald/directory"
	"herald/duty"
	"herald/kernel"
)

// externalIDs maps recipient ids to external ids for the given ids.
func (h *Handlers) externalIDs(c *gin.Context, ids []int64) (map[int64]directory.Recipient, error) {
	people, err := h.Store.Directory().RecipientsByIDs(c.Request.Context(), ids)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]directory.Recipient, len(people))
	for _, p := range people {
		out[p.ID] = p
	}
	return out, nil
}

// APIGetDutyWeek is GET /api/v1/duty/week: {"1":["E1001"],…,"7":[]}.
func (h *Handlers) APIGetDutyWeek(c *gin.Context) {
	week, err := h.Store.Duty().DutyWeek(c.Request.Context())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	var ids []int64
	for _, list := range week {
		ids = append(ids, list...)
	}
	people, err := h.externalIDs(c, ids)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := map[string][]string{}
	for day := 1; day <= 7; day++ {
		names := []string{}
		for _, id := range week[day] {
			names = append(names, people[id].ExternalID)
		}
		slices.Sort(names)
		out[strconv.Itoa(day)] = names
	}
	c.JSON(http.StatusOK, out)
}

// APIPutDutyWeek is PUT /api/v1/duty/week: replaces the whole weekly roster. Weekdays
// left out of the body get an empty roster.
func (h *Handlers) APIPutDutyWeek(c *gin.Context) {
	var body map[string][]string
	if !decodeJSON(c, &body) {
		return
	}
	week := map[int][]string{}
	for key, ids := range body {
		day, err := strconv.Atoi(key)
		if err != nil || day < 1 || day > 7 {
			APIError(c, http.StatusUnprocessableEntity, "validation_failed", tr(c, "duty.api.week_keys"), key)
			return
		}
		week[day] = ids
	}
	if err := h.Dispatch.Duty().ReplaceDutyWeek(c.Request.Context(), actor(c), week); err != nil {
		h.apiFail(c, err)
		return
	}
	h.APIGetDutyWeek(c)
}

type overrideJSON struct {
	Date      string `json:"date"`
	Recipient string `json:"recipient"`
	Action    string `json:"action"`
	Note      string `json:"note"`
}

// dateRange reads from/to query dates, defaulting to [today-7d, today+60d].
func (h *Handlers) dateRange(c *gin.Context, back, ahead int) (string, string, bool) {
	today := time.Now().In(h.Location)
	from, to := c.Query("from"), c.Query("to")
	if from == "" {
		from = today.AddDate(0, 0, -back).Format(time.DateOnly)
	}
	if to == "" {
		to = today.AddDate(0, 0, ahead).Format(time.DateOnly)
	}
	for field, v := range map[string]string{"from": from, "to": to} {
		if err := duty.ValidDate(field, v); err != nil {
			h.apiFail(c, err)
			return "", "", false
		}
	}
	return from, to, true
}

// APIListOverrides is GET /api/v1/duty/overrides?from=&to=.
func (h *Handlers) APIListOverrides(c *gin.Context) {
	from, to, ok := h.dateRange(c, 7, 60)
	if !ok {
		return
	}
	list, err := h.Store.Duty().OverridesBetween(c.Request.Context(), from, to)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	ids := make([]int64, len(list))
	for i, o := range list {
		ids[i] = o.RecipientID
	}
	people, err := h.externalIDs(c, ids)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := make([]overrideJSON, len(list))
	for i, o := range list {
		out[i] = overrideJSON{Date: o.Date, Recipient: people[o.RecipientID].ExternalID, Action: o.Action, Note: o.Note}
	}
	c.JSON(http.StatusOK, out)
}

// APIPutOverride is PUT /api/v1/duty/overrides: adds or removes a person on a date.
func (h *Handlers) APIPutOverride(c *gin.Context) {
	var body overrideJSON
	if !decodeJSON(c, &body) {
		return
	}
	o := duty.Override{Date: body.Date, Recipient: body.Recipient, Action: body.Action, Note: body.Note}
	if _, err := h.Dispatch.Duty().SetOverride(c.Request.Context(), actor(c), o); err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, body)
}

// APIDeleteOverride is DELETE /api/v1/duty/overrides?date=&recipient=.
func (h *Handlers) APIDeleteOverride(c *gin.Context) {
	date, ext := c.Query("date"), c.Query("recipient")
	if _, err := h.Dispatch.Duty().DeleteOverride(c.Request.Context(), actor(c), date, ext); err != nil {
		h.apiFail(c, err, saying(kernel.ErrNotFound, "duty.api.no_override"))
		return
	}
	c.Status(http.StatusNoContent)
}

type holidayJSON struct {
	Date      string `json:"date"`
	Kind      string `json:"kind"`
	AsWeekday *int   `json:"as_weekday,omitempty"`
	Name      string `json:"name"`
}

// APIListHolidays is GET /api/v1/duty/holidays?from=&to=.
func (h *Handlers) APIListHolidays(c *gin.Context) {
	from, to, ok := h.dateRange(c, 30, 366)
	if !ok {
		return
	}
	list, err := h.Store.Duty().HolidaysBetween(c.Request.Context(), from, to)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := make([]holidayJSON, len(list))
	for i, d := range list {
		out[i] = holidayJSON{Date: d.Date, Kind: d.Kind, AsWeekday: d.AsWeekday, Name: d.Name}
	}
	c.JSON(http.StatusOK, out)
}

// APIPutHolidays is PUT /api/v1/duty/holidays: an array of days off and make-up
// workdays, each replacing the entry of its date; all or nothing.
func (h *Handlers) APIPutHolidays(c *gin.Context) {
	var body []holidayJSON
	if !decodeJSON(c, &body) {
		return
	}
	list := make([]duty.Holiday, len(body))
	for i, d := range body {
		list[i] = duty.Holiday{Date: d.Date, Kind: d.Kind, AsWeekday: d.AsWeekday, Name: d.Name}
	}
	if err := h.Dispatch.Duty().SetHolidays(c.Request.Context(), actor(c), list); err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"saved": len(list)})
}

// APIDeleteHoliday is DELETE /api/v1/duty/holidays/:date.
func (h *Handlers) APIDeleteHoliday(c *gin.Context) {
	if err := h.Dispatch.Duty().DeleteHoliday(c.Request.Context(), actor(c), c.Param("date")); err != nil {
		h.apiFail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// APIRoster is GET /api/v1/duty/roster?date=YYYY-MM-DD: who is on duty that date.
func (h *Handlers) APIRoster(c *gin.Context) {
	date := c.DefaultQuery("date", time.Now().In(h.Location).Format(time.DateOnly))
	day, err := time.ParseInLocation(time.DateOnly, date, h.Location)
	if err != nil {
		APIError(c, http.StatusUnprocessableEntity, "validation_failed", tr(c, "duty.roster.bad_date"), "date")
		return
	}
	roster, err := h.Dispatch.Duty().RosterOn(c.Request.Context(), day.Add(12*time.Hour))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	people, err := h.rosterPeople(c, []*duty.Roster{roster})
	if err != nil {
		h.apiFail(c, err)
		return
	}
	var holiday *holidayJSON
	if roster.Holiday != nil {
		holiday = &holidayJSON{Date: roster.Holiday.Date, Kind: roster.Holiday.Kind, AsWeekday: roster.Holiday.AsWeekday, Name: roster.Holiday.Name}
	}
	_, weekday := duty.DateOf(day.Add(12*time.Hour), h.Location)
	c.JSON(http.StatusOK, gin.H{"date": roster.Date, "weekday": weekday, "holiday": holiday, "on_duty": onDuty(roster, people), "configured": !roster.Unconfigured(), "day_off": roster.DayOff()})
}
