package handlers

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"herald/directory"
	"herald/duty"
	"herald/kernel"
)

// onDutyJSON is a person on a roster and where they come from (duty.SourceWeekly,
// "rotation:<name>" or duty.SourceOverride).
type onDutyJSON struct {
	ExternalID string `json:"external_id"`
	Name       string `json:"name"`
	Source     string `json:"source"`
}

// rosterPeople loads everyone on duty in the rosters, by id.
func (h *Handlers) rosterPeople(c *gin.Context, rosters []*duty.Roster) (map[int64]directory.Recipient, error) {
	var ids []int64
	for _, r := range rosters {
		for id := range r.OnDuty {
			ids = append(ids, id)
		}
	}
	return h.externalIDs(c, ids)
}

// onDuty lists a roster's people by external id, with their source.
func onDuty(r *duty.Roster, people map[int64]directory.Recipient) []onDutyJSON {
	out := []onDutyJSON{}
	for id := range r.OnDuty {
		p := people[id]
		out = append(out, onDutyJSON{ExternalID: p.ExternalID, Name: p.Name, Source: r.Source[id]})
	}
	slices.SortFunc(out, func(a, b onDutyJSON) int { return cmp.Compare(a.ExternalID, b.ExternalID) })
	return out
}

// rotationSpecs writes rotations as the API shows them.
func (h *Handlers) rotationSpecs(c *gin.Context, list ...duty.Rotation) ([]duty.RotationSpec, bool) {
	specs, err := h.Store.Duty().RotationSpecs(c.Request.Context(), list)
	if err != nil {
		h.apiFail(c, err)
		return nil, false
	}
	return specs, true
}

// APIListRotations is GET /api/v1/duty/rotations.
func (h *Handlers) APIListRotations(c *gin.Context) {
	list, err := h.Store.Duty().Rotations(c.Request.Context())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	if specs, ok := h.rotationSpecs(c, list...); ok {
		c.JSON(http.StatusOK, specs)
	}
}

// APIGetRotation is GET /api/v1/duty/rotations/:name.
func (h *Handlers) APIGetRotation(c *gin.Context) {
	r, err := h.Store.Duty().RotationByName(c.Request.Context(), c.Param("name"))
	if err != nil {
		h.apiFail(c, err)
		return
	}
	if specs, ok := h.rotationSpecs(c, *r); ok {
		c.JSON(http.StatusOK, specs[0])
	}
}

// APICreateRotation is POST /api/v1/duty/rotations.
func (h *Handlers) APICreateRotation(c *gin.Context) {
	var body duty.RotationSpec
	if !decodeJSON(c, &body) {
		return
	}
	spec, err := h.Dispatch.Duty().CreateRotation(c.Request.Context(), actor(c), body)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusCreated, spec)
}

// APIUpdateRotation is PUT /api/v1/duty/rotations/:name: replaces the rotation, which
// may rename it.
func (h *Handlers) APIUpdateRotation(c *gin.Context) {
	var body duty.RotationSpec
	if !decodeJSON(c, &body) {
		return
	}
	spec, err := h.Dispatch.Duty().UpdateRotation(c.Request.Context(), actor(c), c.Param("name"), body)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, spec)
}

// APIDeleteRotation is DELETE /api/v1/duty/rotations/:name.
func (h *Handlers) APIDeleteRotation(c *gin.Context) {
	if err := h.Dispatch.Duty().DeleteRotation(c.Request.Context(), actor(c), c.Param("name")); err != nil {
		h.apiFail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// Calendar warnings.
const warnNotConfigured = "DUTY_SCHEDULE_NOT_CONFIGURED"

type calendarDayJSON struct {
	Date     string       `json:"date"`
	Kind     string       `json:"kind"`
	OnDuty   []onDutyJSON `json:"on_duty"`
	Warnings []string     `json:"warnings"`
}

// monthRosters reads ?month=YYYY-MM (this month by default) and builds the roster of
// each of its days.
func (h *Handlers) monthRosters(c *gin.Context) (time.Time, []*duty.Roster, error) {
	month := c.Query("month")
	if month == "" {
		month = time.Now().In(h.Location).Format("2006-01")
	}
	first, err := time.Parse("2006-01", month)
	if err != nil || first.Year() < 2000 || first.Year() > 2100 {
		return time.Time{}, nil, kernel.Invalid("month", "calendar.bad_month")
	}
	last := first.AddDate(0, 1, -1)
	rosters, err := duty.Rosters(c.Request.Context(), h.Store.Duty(), first.Format(time.DateOnly), last.Format(time.DateOnly))
	return first, rosters, err
}

// APIDutyCalendar is GET /api/v1/duty/calendar?month=YYYY-MM: every day of the month,
// its kind, who is on duty and why, and its warnings.
func (h *Handlers) APIDutyCalendar(c *gin.Context) {
	first, rosters, err := h.monthRosters(c)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	people, err := h.rosterPeople(c, rosters)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	days := make([]calendarDayJSON, len(rosters))
	for i, r := range rosters {
		days[i] = calendarDayJSON{Date: r.Date, Kind: r.Kind, OnDuty: onDuty(r, people), Warnings: []string{}}
		if r.Unconfigured() {
			days[i].Warnings = append(days[i].Warnings, warnNotConfigured)
		}
	}
	c.JSON(http.StatusOK, gin.H{"month": first.Format("2006-01"), "days": days})
}
