package dispatch

import (
	"context"
	"time"

	"herald/models"
)

// Skip reasons of the duty rule.
const (
	ReasonOffDuty           = "off_duty"
	ReasonDutyNotConfigured = "duty_not_configured"
	// ReasonHoliday: the date is a day off (a holiday entry of kind off) and nobody was
	// put on duty for it: a deliberate rest day, not a missing schedule.
	ReasonHoliday = "holiday"
)

// Roster is who is on duty on one date.
type Roster struct {
	Date    string // YYYY-MM-DD in HERALD_TIMEZONE
	Holiday *models.Holiday
	OnDuty  map[int64]bool
}

// Empty reports whether nobody is on duty on the date.
func (r *Roster) Empty() bool { return len(r.OnDuty) == 0 }

// DayOff reports whether the date is a day off (a holiday entry of kind off).
func (r *Roster) DayOff() bool { return r.Holiday != nil && r.Holiday.Kind == models.HolidayOff }

// Unconfigured reports whether nobody is on duty on a workday: the schedule is missing
// for the date. An empty day off is a rest day, not a mistake.
func (r *Roster) Unconfigured() bool { return r.Empty() && !r.DayOff() }

// BuildRoster applies the rule to one date's data: the weekly roster that applies (the
// store already chose it for holidays and make-up workdays), then the date's overrides
// in the order they were made.
func BuildRoster(date string, day *models.DutyDay) *Roster {
	r := &Roster{Date: date, Holiday: day.Holiday, OnDuty: make(map[int64]bool, len(day.Weekly))}
	for _, id := range day.Weekly {
		r.OnDuty[id] = true
	}
	for _, o := range day.Overrides {
		switch o.Action {
		case models.OverrideAdd:
			r.OnDuty[o.RecipientID] = true
		case models.OverrideRemove:
			delete(r.OnDuty, o.RecipientID)
		}
	}
	return r
}

// SkipReason returns why a recipient does not receive on the roster's date, or "" if
// they do: branch staff always receive, head-office staff only when on duty.
func (r *Roster) SkipReason(p *models.Recipient) string {
	if p.OrgType != models.HeadOffice {
		return ""
	}
	if r.Empty() {
		if r.DayOff() {
			return ReasonHoliday
		}
		return ReasonDutyNotConfigured
	}
	if !r.OnDuty[p.ID] {
		return ReasonOffDuty
	}
	return ""
}

// DateOf returns the calendar date and ISO weekday (1 = Monday … 7 = Sunday) of t in loc.
func DateOf(t time.Time, loc *time.Location) (string, int) {
	local := t.In(loc)
	wd := int(local.Weekday())
	if wd == 0 {
		wd = 7
	}
	return local.Format(time.DateOnly), wd
}

// RosterOn loads and builds the roster of the date t falls on in the dispatcher's time
// zone. A workday with nobody on duty is logged as DUTY_SCHEDULE_NOT_CONFIGURED; a day
// off is not.
func (d *Dispatcher) RosterOn(ctx context.Context, t time.Time) (*Roster, error) {
	date, weekday := DateOf(t, d.Location)
	day, err := d.Store.DutyDayOf(ctx, date, weekday)
	if err != nil {
		return nil, err
	}
	r := BuildRoster(date, day)
	if r.Unconfigured() {
		d.Log.Warn("DUTY_SCHEDULE_NOT_CONFIGURED", "date", date)
	}
	return r, nil
}
