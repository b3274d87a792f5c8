// Package reports answers the questions of a duty manager's review: how fast alerts are
// acknowledged and resolved (the response report), who was interrupted by notices and
// when (the interruptions report), and how many duty days of each kind of day each
// person carried (the duty load report); and it sends them on a schedule as ordinary
// notices. Each report reads one range of dates in Herald's time zone.
package reports

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"herald/duty"
	"herald/kernel"
)

// The reports, as the API and the schedules name them.
const (
	ReportResponse      = "response"
	ReportInterruptions = "interruptions"
	ReportDuty          = "duty"
)

// Names lists the reports in the order the page shows them.
var Names = []string{ReportResponse, ReportInterruptions, ReportDuty}

// What the response report groups its rows by.
const (
	ByPolicy      = "policy"
	ByRotation    = "rotation"
	ByPerson      = "person"
	ByIntegration = "integration"
	ByDepartment  = "department"
)

// GroupBys lists what the response report may group by.
var GroupBys = []string{ByPolicy, ByRotation, ByPerson, ByIntegration, ByDepartment}

// MaxRangeDays is the longest range a report reads.
const MaxRangeDays = 366

// DefaultSleep is the sleep span when none is given.
const DefaultSleep = "23:00-08:00"

// Work hours on a working day, minutes of the day: 08:00 to 19:00.
const workFrom, workTo = 8 * 60, 19 * 60

// Range is a report's range: whole dates in Herald's time zone, both included.
type Range struct {
	From, To string // YYYY-MM-DD
	// Start and End are the instants the range begins and ends (exclusive).
	Start, End time.Time
}

// Days counts the dates in the range.
func (r Range) Days() int { return int(r.dateTo().Sub(r.dateFrom()).Hours()/24) + 1 }

func (r Range) dateFrom() time.Time { t, _ := time.Parse(time.DateOnly, r.From); return t }
func (r Range) dateTo() time.Time   { t, _ := time.Parse(time.DateOnly, r.To); return t }

// ParseRange reads a range of dates in loc: from and to (YYYY-MM-DD) both included; a
// missing one is this week's Monday or today. A date that cannot be read, a range that
// ends before it begins or is longer than MaxRangeDays is a *kernel.FieldError.
func ParseRange(from, to string, now time.Time, loc *time.Location) (Range, error) {
	today := now.In(loc)
	day := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	first, last := day.AddDate(0, 0, 1-duty.Weekday(day)), day
	var err error
	if from = strings.TrimSpace(from); from != "" {
		if first, err = time.Parse(time.DateOnly, from); err != nil {
			return Range{}, kernel.Invalid("from", "validation.date")
		}
	}
	if to = strings.TrimSpace(to); to != "" {
		if last, err = time.Parse(time.DateOnly, to); err != nil {
			return Range{}, kernel.Invalid("to", "validation.date")
		}
	}
	if last.Before(first) {
		return Range{}, kernel.Invalid("to", "reports.invalid.order")
	}
	if last.Sub(first) >= MaxRangeDays*24*time.Hour {
		return Range{}, kernel.Invalid("to", "reports.invalid.too_long", "Days", MaxRangeDays)
	}
	return Range{From: first.Format(time.DateOnly), To: last.Format(time.DateOnly),
		Start: time.Date(first.Year(), first.Month(), first.Day(), 0, 0, 0, 0, loc).UTC(),
		End:   time.Date(last.Year(), last.Month(), last.Day()+1, 0, 0, 0, 0, loc).UTC()}, nil
}

// Preset is the range the page offers by name as of now in loc: this week (Monday to
// today, also for a name it does not know) or last_month (its first to its last day).
func Preset(name string, now time.Time, loc *time.Location) (from, to string) {
	t := now.In(loc)
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch name {
	case "last_month":
		first := time.Date(t.Year(), t.Month()-1, 1, 0, 0, 0, 0, time.UTC)
		return first.Format(time.DateOnly), first.AddDate(0, 1, -1).Format(time.DateOnly)
	default: // this_week
		return day.AddDate(0, 0, 1-duty.Weekday(day)).Format(time.DateOnly), day.Format(time.DateOnly)
	}
}

// ParseSleep reads a sleep span "HH:MM-HH:MM" into minutes of the day; the span may
// wrap midnight (23:00-08:00) but not be empty. A bad span is a *kernel.FieldError.
func ParseSleep(s string) (from, to int, err error) {
	if s = strings.TrimSpace(s); s == "" {
		s = DefaultSleep
	}
	a, b, ok := strings.Cut(s, "-")
	ta, errA := time.Parse("15:04", strings.TrimSpace(a))
	tb, errB := time.Parse("15:04", strings.TrimSpace(b))
	if !ok || errA != nil || errB != nil || ta.Equal(tb) {
		return 0, 0, kernel.Invalid("sleep", "reports.invalid.sleep")
	}
	return ta.Hour()*60 + ta.Minute(), tb.Hour()*60 + tb.Minute(), nil
}

// Response is one row of the response report: the alerts of one group, how many were
// acknowledged, how long acknowledging and resolving took, how many went past their
// first step and how many ran out of steps with nobody acknowledging.
type Response struct {
	// Key names the group: a policy, a rotation, a person's external id, an
	// integration or a department; "" for alerts with none (and the overall row).
	Key  string `json:"key"`
	Name string `json:"name"`
	// Alerts opened in the range; Acknowledged of them; AckRate = Acknowledged/Alerts.
	Alerts       int     `json:"alerts"`
	Acknowledged int     `json:"acknowledged"`
	AckRate      float64 `json:"ack_rate"`
	// Seconds from opening to the acknowledgment (of the acknowledged) and to the
	// resolution (of the resolved): median and 90th percentile; nil with none.
	AckMedian     *float64 `json:"ack_seconds_median"`
	AckP90        *float64 `json:"ack_seconds_p90"`
	ResolveMedian *float64 `json:"resolve_seconds_median"`
	ResolveP90    *float64 `json:"resolve_seconds_p90"`
	// Escalated went past step 1 (a later step or round fired); Exhausted ran out.
	Escalated int `json:"escalated"`
	Exhausted int `json:"exhausted"`

	ack, resolve []float64
}

// ResponseReport is the response report: a row per group, by key, and all alerts.
type ResponseReport struct {
	Range   Range      `json:"-"`
	GroupBy string     `json:"group_by"`
	Rows    []Response `json:"rows"`
	Overall Response   `json:"overall"`
}

// add counts one alert in the row.
func (r *Response) add(a *alertTimes) {
	r.Alerts++
	if a.AcknowledgedAt != nil {
		r.Acknowledged++
		r.ack = append(r.ack, a.AcknowledgedAt.Sub(a.OpenedAt).Seconds())
	}
	if a.ResolvedAt != nil {
		r.resolve = append(r.resolve, a.ResolvedAt.Sub(a.OpenedAt).Seconds())
	}
	if a.Step > 1 || a.Round > 1 {
		r.Escalated++
	}
	if a.State == "exhausted" {
		r.Exhausted++
	}
}

// finish works out the row's rate and percentiles.
func (r *Response) finish() {
	if r.Alerts > 0 {
		r.AckRate = math.Round(float64(r.Acknowledged)/float64(r.Alerts)*10000) / 10000
	}
	r.AckMedian, r.AckP90 = percentile(r.ack, 0.5), percentile(r.ack, 0.9)
	r.ResolveMedian, r.ResolveP90 = percentile(r.resolve, 0.5), percentile(r.resolve, 0.9)
	r.ack, r.resolve = nil, nil
}

// percentile is the p-th quantile of values, interpolated linearly between the two
// nearest ranks (the median of 2 s and 4 s is 3 s), to the millisecond; nil with none.
func percentile(values []float64, p float64) *float64 {
	if len(values) == 0 {
		return nil
	}
	slices.Sort(values)
	pos := p * float64(len(values)-1)
	lo := int(math.Floor(pos))
	v := values[lo]
	if lo+1 < len(values) {
		v += (values[lo+1] - values[lo]) * (pos - float64(lo))
	}
	v = math.Round(v*1000) / 1000
	return &v
}

// Interruptions is one person's row of the interruptions report.
type Interruptions struct {
	Recipient string `json:"recipient"`
	Name      string `json:"name"`
	// Notices delivered to the person (sent); Interruptions among them (a notice
	// within a minute of the one before joins its interruption), split by when each
	// began: Work, Rest and Sleep add up to Interruptions.
	Notices       int `json:"notices"`
	Interruptions int `json:"interruptions"`
	Work          int `json:"work_hours"`
	Rest          int `json:"rest_hours"`
	Sleep         int `json:"sleep_hours"`
}

// InterruptionsReport is the interruptions report: a row per person, most interrupted
// first, and their sum.
type InterruptionsReport struct {
	Range  Range           `json:"-"`
	Sleep  string          `json:"sleep"`
	People []Interruptions `json:"people"`
	Total  Interruptions   `json:"total"`
}

// Day kinds of the duty load report, as the holiday calendar names them.
var DayKinds = []string{duty.DayWorkday, duty.DayWeekend, duty.DayHoliday, duty.DayMakeupWorkday}

// DutyLoad is one person's row of the duty load report: days on duty by kind of day.
type DutyLoad struct {
	Recipient     string `json:"recipient"`
	Name          string `json:"name"`
	Workday       int    `json:"workday"`
	Weekend       int    `json:"weekend"`
	Holiday       int    `json:"holiday"`
	MakeupWorkday int    `json:"makeup_workday"`
	Total         int    `json:"total"`
}

// add counts one day of kind on duty.
func (d *DutyLoad) add(kind string, n int) {
	switch kind {
	case duty.DayWorkday:
		d.Workday += n
	case duty.DayWeekend:
		d.Weekend += n
	case duty.DayHoliday:
		d.Holiday += n
	case duty.DayMakeupWorkday:
		d.MakeupWorkday += n
	default:
		panic(fmt.Sprintf("reports: unknown kind of day %q", kind))
	}
	d.Total += n
}

// Of is the days of one kind.
func (d *DutyLoad) Of(kind string) int {
	switch kind {
	case duty.DayWorkday:
		return d.Workday
	case duty.DayWeekend:
		return d.Weekend
	case duty.DayHoliday:
		return d.Holiday
	}
	return d.MakeupWorkday
}

// DutyReport is the duty load report: a row per person who was on duty in the range,
// by external id, and their sum.
type DutyReport struct {
	Range  Range      `json:"-"`
	People []DutyLoad `json:"people"`
	Total  DutyLoad   `json:"total"`
}
