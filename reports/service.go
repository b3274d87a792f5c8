package reports

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/directory"
	"herald/duty"
	"herald/kernel"
)

// Sender sends a scheduled report's summary as an ordinary notice, through the intake's
// normal send path (dispatch).
type Sender interface {
	SendReport(ctx context.Context, to Send, subject, text string) error
}

// Config is what the reports' service is built from.
type Config struct {
	Store *Tallies
	// Duty is the duty rule's data: the roster of each day and the kind of each date.
	Duty *duty.Schedule
	// Staff names the people the reports count.
	Staff *directory.Staff
	// Policies are the escalation policies, whose steps name the rotations an alert
	// calls.
	Policies *alert.Ledger
	Location *time.Location
	Now      kernel.Clock
	// Sender sends scheduled reports; nil where none are sent.
	Sender Sender
	// Language is the scheduled reports' language; PublicURL the base of their link.
	Language, PublicURL string
	Log                 *slog.Logger
}

// Analyst works out the reports, each the same for the console, the API and a
// schedule, and keeps the report schedules (changes written with their audit entry in
// one transaction, audit.Run).
type Analyst struct {
	cfg Config

	// talliedThrough is the last closed date (Unix seconds of its midnight UTC) that
	// TallyClosedDays found tallied with every one before it.
	talliedThrough atomic.Int64
}

// NewService builds the reports' service from cfg.
func NewService(cfg Config) *Analyst {
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Analyst{cfg: cfg}
}

func (a *Analyst) now() time.Time { return a.cfg.Now.Now() }

// Location is the time zone the reports' dates are in.
func (a *Analyst) Location() *time.Location { return a.cfg.Location }

// Range reads a range of dates (ParseRange) as of now.
func (a *Analyst) Range(from, to string) (Range, error) {
	return ParseRange(from, to, a.now(), a.cfg.Location)
}

// Preset is the range a named preset of the page covers today (Preset).
func (a *Analyst) Preset(name string) (from, to string) { return Preset(name, a.now(), a.cfg.Location) }

// Response is the response report over r grouped by groupBy (GroupBys; "" is by
// policy), of the alerts by may see: an admin every alert, a send or read key the
// alerts of its own batches.
func (a *Analyst) Response(ctx context.Context, by audit.Actor, r Range, groupBy string) (*ResponseReport, error) {
	if groupBy == "" {
		groupBy = ByPolicy
	}
	if !slices.Contains(GroupBys, groupBy) {
		return nil, kernel.Invalid("group_by", "reports.invalid.group_by")
	}
	alerts, err := a.cfg.Store.AlertTimes(ctx, r.Start, r.End, by.OwnKey())
	if err != nil {
		return nil, err
	}
	keys, names, err := a.groupKeys(ctx, by, r, groupBy, alerts)
	if err != nil {
		return nil, err
	}
	rows := map[string]*Response{}
	out := &ResponseReport{Range: r, GroupBy: groupBy, Rows: []Response{}}
	for i := range alerts {
		al := &alerts[i]
		out.Overall.add(al)
		for _, k := range keys(al) {
			row := rows[k]
			if row == nil {
				row = &Response{Key: k, Name: names[k]}
				rows[k] = row
			}
			row.add(al)
		}
	}
	for _, row := range rows {
		row.finish()
		out.Rows = append(out.Rows, *row)
	}
	out.Overall.finish()
	slices.SortFunc(out.Rows, func(x, y Response) int { return cmp.Compare(x.Key, y.Key) })
	return out, nil
}

// groupKeys returns, for the grouping asked, the groups each alert counts in (an alert
// that reached two people counts for each) and the display name of each key.
func (a *Analyst) groupKeys(ctx context.Context, by audit.Actor, r Range, groupBy string, alerts []alertTimes) (func(*alertTimes) []string, map[string]string, error) {
	names := map[string]string{}
	switch groupBy {
	case ByIntegration:
		return func(al *alertTimes) []string { return []string{al.Source} }, names, nil
	case ByRotation:
		policies, err := a.cfg.Policies.Policies(ctx)
		if err != nil {
			return nil, nil, err
		}
		rotations := map[string][]string{}
		for i := range policies {
			rotations[policies[i].Name] = policies[i].Rotations()
		}
		return func(al *alertTimes) []string {
			if rs := rotations[al.Policy]; len(rs) > 0 {
				return rs
			}
			return []string{""}
		}, names, nil
	case ByPerson, ByDepartment:
		pairs, err := a.cfg.Store.AlertPeople(ctx, alerts)
		if err != nil {
			return nil, nil, err
		}
		ids := make([]int64, len(pairs))
		for i, p := range pairs {
			ids[i] = p.RecipientID
		}
		people, err := a.people(ctx, ids)
		if err != nil {
			return nil, nil, err
		}
		of := map[int64][]string{}
		for _, p := range pairs {
			person := people[p.RecipientID]
			k := person.ExternalID
			if groupBy == ByDepartment {
				k = person.Department
			} else {
				names[k] = person.Name
			}
			if !slices.Contains(of[p.AlertID], k) {
				of[p.AlertID] = append(of[p.AlertID], k)
			}
		}
		return func(al *alertTimes) []string {
			if ks := of[al.ID]; len(ks) > 0 {
				return ks
			}
			return []string{""}
		}, names, nil
	}
	return func(al *alertTimes) []string { return []string{al.Policy} }, names, nil
}

// people reads the people of the ids given, by id.
func (a *Analyst) people(ctx context.Context, ids []int64) (map[int64]directory.Recipient, error) {
	list := slices.Clone(ids)
	slices.Sort(list)
	list = slices.Compact(list)
	out := make(map[int64]directory.Recipient, len(list))
	for chunk := range slices.Chunk(list, 500) {
		rows, err := a.cfg.Staff.RecipientsByIDs(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for _, p := range rows {
			out[p.ID] = p
		}
	}
	return out, nil
}

// Interruptions is the interruptions report over r with the sleep span given
// (ParseSleep; "" is DefaultSleep), of the notices by may see: an admin every notice, a
// send or read key those of its own batches and of the alerts they opened.
func (a *Analyst) Interruptions(ctx context.Context, by audit.Actor, r Range, sleep string) (*InterruptionsReport, error) {
	sleepFrom, sleepTo, err := ParseSleep(sleep)
	if err != nil {
		return nil, err
	}
	rosters, err := duty.Rosters(ctx, a.cfg.Duty, r.From, r.To)
	if err != nil {
		return nil, err
	}
	working := map[string]bool{}
	for _, d := range rosters {
		working[d.Date] = d.Kind == duty.DayWorkday || d.Kind == duty.DayMakeupWorkday
	}
	days, err := a.noticeDays(ctx, r, by.OwnKey())
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(days))
	for i, d := range days {
		ids[i] = d.RecipientID
	}
	people, err := a.people(ctx, ids)
	if err != nil {
		return nil, err
	}
	asleep := func(m int) bool { return m >= sleepFrom && m < sleepTo }
	if sleepFrom > sleepTo {
		asleep = func(m int) bool { return m >= sleepFrom || m < sleepTo }
	}
	rows := map[int64]*Interruptions{}
	out := &InterruptionsReport{Range: r, Sleep: minutes(sleepFrom) + "-" + minutes(sleepTo), People: []Interruptions{}}
	for _, d := range days {
		row := rows[d.RecipientID]
		if row == nil {
			p := people[d.RecipientID]
			row = &Interruptions{Recipient: p.ExternalID, Name: p.Name}
			rows[d.RecipientID] = row
		}
		var work, rest, sleep int
		for _, m := range d.Starts {
			switch {
			case working[d.LocalDay] && m >= workFrom && m < workTo:
				work++
			case asleep(m):
				sleep++
			default:
				rest++
			}
		}
		for _, x := range []*Interruptions{row, &out.Total} {
			x.Notices += d.Notices
			x.Interruptions += len(d.Starts)
			x.Work, x.Rest, x.Sleep = x.Work+work, x.Rest+rest, x.Sleep+sleep
		}
	}
	for _, row := range rows {
		out.People = append(out.People, *row)
	}
	slices.SortFunc(out.People, func(x, y Interruptions) int {
		return cmp.Or(cmp.Compare(y.Interruptions, x.Interruptions), cmp.Compare(x.Recipient, y.Recipient))
	})
	return out, nil
}

func minutes(m int) string { return time.Date(0, 1, 1, m/60, m%60, 0, 0, time.UTC).Format("15:04") }

// Duty is the duty load report over r: each person's days on duty by kind of day, from
// the roster of each date by the duty rule the sends use (duty.Rosters: the weekly
// roster, rotations, overrides and swaps, on the holiday calendar), so that its totals
// are what the duty calendar shows for the same dates.
func (a *Analyst) Duty(ctx context.Context, r Range) (*DutyReport, error) {
	rosters, err := duty.Rosters(ctx, a.cfg.Duty, r.From, r.To)
	if err != nil {
		return nil, err
	}
	counts := map[int64]*DutyLoad{}
	out := &DutyReport{Range: r, People: []DutyLoad{}}
	for _, d := range rosters {
		for id := range d.OnDuty {
			if counts[id] == nil {
				counts[id] = &DutyLoad{}
			}
			counts[id].add(d.Kind, 1)
			out.Total.add(d.Kind, 1)
		}
	}
	ids := make([]int64, 0, len(counts))
	for id := range counts {
		ids = append(ids, id)
	}
	people, err := a.people(ctx, ids)
	if err != nil {
		return nil, err
	}
	for id, row := range counts {
		row.Recipient, row.Name = people[id].ExternalID, people[id].Name
		out.People = append(out.People, *row)
	}
	slices.SortFunc(out.People, func(x, y DutyLoad) int { return cmp.Compare(x.Recipient, y.Recipient) })
	return out, nil
}

// errNoSender: the service was built without a way to send.
var errNoSender = errors.New("reports: no sender to send scheduled reports with")
