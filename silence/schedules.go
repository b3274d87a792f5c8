package silence

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"herald/audit"
	"herald/delivery"
	"herald/duty"
	"herald/kernel"
)

// A recurring silence holds during the windows its schedule makes, each day the
// schedule's days name, from start to end in its time zone; a window whose end is not
// after its start crosses midnight and belongs to the day it starts on. The days follow
// the duty calendar: workdays are the working days (make-up workdays included,
// statutory holidays excluded), restdays the others, holidays the statutory holidays
// alone. The silence's own starts_at and ends_at bound the windows, and it is approved
// once for all of them.

// The day sets a schedule may name besides weekdays.
const (
	DaysWorkdays = "workdays"
	DaysRestdays = "restdays"
	DaysHolidays = "holidays"
)

// weekdayNames are the weekdays a schedule may list, Sunday first as time.Weekday.
var weekdayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// Schedule is a recurring silence's schedule, stored as JSON in one column.
type Schedule struct {
	Days     string `json:"days"`
	Start    string `json:"start"`
	End      string `json:"end"`
	Timezone string `json:"timezone"`
}

// Value implements driver.Valuer.
func (s Schedule) Value() (driver.Value, error) {
	b, err := json.Marshal(s)
	return string(b), err
}

// Scan implements sql.Scanner.
func (s *Schedule) Scan(src any) error { return kernel.ScanJSON(src, s) }

// String is the schedule as its audit entries show it: "workdays 23:30–02:00
// Asia/Shanghai"; "" for none.
func (s *Schedule) String() string {
	if s == nil {
		return ""
	}
	return s.Days + " " + s.Start + "–" + s.End + " " + s.Timezone
}

// MaxOccurrenceSpan is the longest span one occurrences list covers.
const MaxOccurrenceSpan = 92 * 24 * time.Hour

// clock is a time of day in minutes, from an "HH:MM" text; false when it is not one.
func clock(s string) (int, bool) {
	t, err := time.Parse("15:04", s)
	if err != nil || len(s) != 5 {
		return 0, false
	}
	return t.Hour()*60 + t.Minute(), true
}

// checkSchedule validates a schedule and fills its time zone (loc's when empty); the
// error names the field (schedule.days, .start, .end or .timezone).
func checkSchedule(s *Schedule, loc *time.Location) error {
	s.Days = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s.Days), " ", ""))
	switch s.Days {
	case DaysWorkdays, DaysRestdays, DaysHolidays:
	case "":
		return kernel.Invalid("schedule.days", "silences.check.schedule_days")
	default:
		for _, d := range strings.Split(s.Days, ",") {
			if !slices.Contains(weekdayNames, d) {
				return kernel.Invalid("schedule.days", "silences.check.schedule_day", "Day", d)
			}
		}
	}
	start, ok := clock(s.Start)
	if !ok {
		return kernel.Invalid("schedule.start", "silences.check.schedule_time")
	}
	end, ok := clock(s.End)
	if !ok {
		return kernel.Invalid("schedule.end", "silences.check.schedule_time")
	}
	if start == end {
		return kernel.Invalid("schedule.end", "silences.check.schedule_same")
	}
	if s.Timezone == "" && loc != nil {
		s.Timezone = loc.String()
	}
	if _, err := time.LoadLocation(s.Timezone); err != nil || s.Timezone == "" || strings.EqualFold(s.Timezone, "local") {
		return kernel.Invalid("schedule.timezone", "silences.check.schedule_timezone")
	}
	return nil
}

// length is how long each window of the schedule lasts.
func (s Schedule) length() time.Duration {
	start, _ := clock(s.Start)
	end, _ := clock(s.End)
	if end <= start {
		end += 24 * 60
	}
	return time.Duration(end-start) * time.Minute
}

// holds reports whether the schedule's days take a date of the given weekday and
// duty-calendar kind (duty.Day…).
func (s Schedule) holds(wd time.Weekday, kind string) bool {
	switch s.Days {
	case DaysWorkdays:
		return kind == duty.DayWorkday || kind == duty.DayMakeupWorkday
	case DaysRestdays:
		return kind == duty.DayWeekend || kind == duty.DayHoliday
	case DaysHolidays:
		return kind == duty.DayHoliday
	}
	return slices.Contains(strings.Split(s.Days, ","), weekdayNames[wd])
}

// windows are the schedule's windows that overlap [from, to), in order, given each
// date's duty-calendar kind (kinds by YYYY-MM-DD; a date not in it is a workday or a
// weekend by its weekday).
func (s Schedule) windows(from, to time.Time, kinds map[string]string) []delivery.Window {
	loc, err := time.LoadLocation(s.Timezone)
	if err != nil {
		return nil
	}
	start, _ := clock(s.Start)
	length := s.length()
	var out []delivery.Window
	// A window starting the day before from may still be open at from.
	f := from.In(loc)
	day := time.Date(f.Year(), f.Month(), f.Day()-1, 0, 0, 0, 0, loc)
	for ; day.Before(to); day = day.AddDate(0, 0, 1) {
		kind, ok := kinds[day.Format(time.DateOnly)]
		if !ok {
			kind = duty.DayWorkday
			if wd := day.Weekday(); wd == time.Saturday || wd == time.Sunday {
				kind = duty.DayWeekend
			}
		}
		if !s.holds(day.Weekday(), kind) {
			continue
		}
		w := time.Date(day.Year(), day.Month(), day.Day(), start/60, start%60, 0, 0, loc)
		win := delivery.Window{Start: w.UTC(), End: w.Add(length).UTC()}
		if win.End.After(from) && win.Start.Before(to) {
			out = append(out, win)
		}
	}
	return out
}

// dayKinds are the duty calendar's kinds of the dates that a holiday entry marks
// (a day off or a make-up workday) from one date to another, by YYYY-MM-DD.
func (s *Holds) dayKinds(ctx context.Context, from, to time.Time) (map[string]string, error) {
	list, err := s.calendar.HolidaysBetween(ctx, from.AddDate(0, 0, -2).Format(time.DateOnly), to.AddDate(0, 0, 2).Format(time.DateOnly))
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list))
	for _, h := range list {
		out[h.Date] = duty.DayMakeupWorkday
		if h.Kind == duty.HolidayOff {
			out[h.Date] = duty.DayHoliday
		}
	}
	return out, nil
}

// Occurrences are the windows a silence holds in that overlap [from, to), in order:
// its one window from its start to its end for a silence of fixed times, each window of
// its schedule within them for a recurring one.
func (s *Holds) Occurrences(ctx context.Context, sil *Silence, from, to time.Time) ([]delivery.Window, error) {
	if sil.Schedule == nil {
		if sil.StartsAt.Before(to) && sil.End().After(from) && sil.End().After(sil.StartsAt) {
			return []delivery.Window{{Start: sil.StartsAt, End: sil.End()}}, nil
		}
		return nil, nil
	}
	from, to = later(from, sil.StartsAt), earlier(to, sil.End())
	if !to.After(from) {
		return nil, nil
	}
	kinds, err := s.dayKinds(ctx, from, to)
	if err != nil {
		return nil, err
	}
	var out []delivery.Window
	for _, w := range sil.Schedule.windows(from, to, kinds) {
		w.Start, w.End = later(w.Start, sil.StartsAt), earlier(w.End, sil.End())
		if w.End.After(w.Start) {
			out = append(out, w)
		}
	}
	return out, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Live is a live silence with the windows it holds in around a moment (LiveWindows).
type Live struct {
	Silence
	Windows []delivery.Window
}

// liveLookahead is how far past now LiveWindows reads a recurring silence's windows:
// more than a worker keeps what it read.
const liveLookahead = time.Hour

// LiveWindows lists the live silences (LiveSilences), each with the windows it holds in
// from now to liveLookahead later.
func (s *Holds) LiveWindows(ctx context.Context, now time.Time) ([]Live, error) {
	list, err := s.LiveSilences(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Live, len(list))
	for i := range list {
		out[i].Silence = list[i]
		if out[i].Windows, err = s.Occurrences(ctx, &list[i], now, now.Add(liveLookahead)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Occurrences lists the windows of a silence by may see that overlap [from, to): from
// must come before to, at most MaxOccurrenceSpan apart (a *kernel.FieldError naming
// to otherwise).
func (d *Keeper) Occurrences(ctx context.Context, by audit.Actor, id int64, from, to time.Time) ([]delivery.Window, error) {
	sil, err := d.Silence(ctx, by, id)
	if err != nil {
		return nil, err
	}
	if !to.After(from) {
		return nil, kernel.Invalid("to", "silences.check.occurrences_order")
	}
	if to.Sub(from) > MaxOccurrenceSpan {
		return nil, kernel.Invalid("to", "silences.check.occurrences_span", "Days", int(MaxOccurrenceSpan/(24*time.Hour)))
	}
	return d.store.Occurrences(ctx, sil, from, to)
}

// NextOccurrences are the next n windows of a silence from now (the one under way
// first), looking at most MaxOccurrenceSpan ahead.
func (d *Keeper) NextOccurrences(ctx context.Context, sil *Silence, n int) ([]delivery.Window, error) {
	now := d.now()
	list, err := d.store.Occurrences(ctx, sil, now, now.Add(MaxOccurrenceSpan))
	if len(list) > n {
		list = list[:n]
	}
	return list, err
}
