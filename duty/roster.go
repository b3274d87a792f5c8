package duty

import (
	"context"
	"time"

	"herald/directory"
	"herald/kernel"
)

// Skip reasons of the duty rule.
const (
	ReasonOffDuty           = "off_duty"
	ReasonDutyNotConfigured = "duty_not_configured"
	// ReasonHoliday: the date is a day off (a holiday entry of kind off) and nobody was
	// put on duty for it: a deliberate rest day, not a missing schedule.
	ReasonHoliday = "holiday"
)

// Where a person on a roster comes from.
const (
	SourceWeekly   = "weekly"
	SourceRotation = "rotation:" // followed by the rotation's name
	SourceOverride = "override"
)

// Roster is who is on duty on one date.
type Roster struct {
	Date    string // YYYY-MM-DD in HERALD_TIMEZONE
	Kind    string // DayWorkday, DayWeekend, DayHoliday or DayMakeupWorkday
	Holiday *Holiday
	OnDuty  map[int64]bool
	// Source says where each person on duty comes from: SourceWeekly, SourceRotation
	// plus the rotation's name, or SourceOverride (the first that puts them there).
	Source map[int64]string
}

// Empty reports whether nobody is on duty on the date.
func (r *Roster) Empty() bool { return len(r.OnDuty) == 0 }

// DayOff reports whether the date is a day off (a holiday entry of kind off).
func (r *Roster) DayOff() bool { return r.Kind == DayHoliday }

// Unconfigured reports whether nobody is on duty on a day that is not a day off: the
// schedule is missing for the date. An empty day off is a rest day, not a mistake.
func (r *Roster) Unconfigured() bool { return r.Empty() && !r.DayOff() }

// BuildRoster applies the rule to one date's data: the weekly roster that applies (the
// store already chose it for days off and make-up workdays), joined by the people whose
// turn it is in each rotation covering the date, then the date's overrides in the order
// they were made.
func BuildRoster(day *DutyDay) *Roster {
	r := &Roster{Date: day.Date, Kind: day.Kind, Holiday: day.Holiday, OnDuty: make(map[int64]bool, len(day.Weekly)), Source: map[int64]string{}}
	put := func(id int64, source string) {
		if !r.OnDuty[id] {
			r.OnDuty[id], r.Source[id] = true, source
		}
	}
	for _, id := range day.Weekly {
		put(id, SourceWeekly)
	}
	for _, turn := range day.Rotations {
		for _, id := range turn.Members {
			put(id, SourceRotation+turn.Name)
		}
	}
	for _, o := range day.Overrides {
		switch o.Action {
		case OverrideAdd:
			put(o.RecipientID, SourceOverride)
		case OverrideRemove:
			delete(r.OnDuty, o.RecipientID)
			delete(r.Source, o.RecipientID)
		}
	}
	return r
}

// SkipReason returns why a recipient does not receive on the roster's date, or "" if
// they do: branch staff always receive, head-office staff only when on duty.
func (r *Roster) SkipReason(p *directory.Recipient) string {
	if p.OrgType != directory.HeadOffice {
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
// zone. A day that is not a day off with nobody on duty is logged as
// DUTY_SCHEDULE_NOT_CONFIGURED; a day off is not.
func (d *Planner) RosterOn(ctx context.Context, t time.Time) (*Roster, error) {
	date, _ := DateOf(t, d.loc)
	day, err := d.store.DutyDayOf(ctx, date)
	if err != nil {
		return nil, err
	}
	r := BuildRoster(day)
	if r.Unconfigured() {
		d.log.Warn("DUTY_SCHEDULE_NOT_CONFIGURED", "date", date)
	}
	return r, nil
}

// Rosters builds the roster of every date from one to another, inclusive (YYYY-MM-DD),
// by the same rule as RosterOn, without logging: for pages and calendars that show the
// warning themselves.
func Rosters(ctx context.Context, store *Schedule, from, to string) ([]*Roster, error) {
	first, err := time.Parse(time.DateOnly, from)
	if err != nil {
		return nil, kernel.Invalid("from", "validation.date")
	}
	last, err := time.Parse(time.DateOnly, to)
	if err != nil {
		return nil, kernel.Invalid("to", "validation.date")
	}
	data, err := store.DutyBetween(ctx, from, to)
	if err != nil {
		return nil, err
	}
	var out []*Roster
	for t := first; !t.After(last); t = t.AddDate(0, 0, 1) {
		day, err := data.Day(t.Format(time.DateOnly))
		if err != nil {
			return nil, err
		}
		out = append(out, BuildRoster(day))
	}
	return out, nil
}
