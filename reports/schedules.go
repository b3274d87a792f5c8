package reports

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"herald/audit"
	"herald/directory"
	"herald/i18n"
	"herald/kernel"
)

// Periods of a report schedule: weekly reports go out on Monday at 09:00 with the week
// before, monthly ones on the 1st at 09:00 with the month before, in Herald's time zone.
const (
	Weekly  = "weekly"
	Monthly = "monthly"
)

// Periods lists the periods a schedule may have.
var Periods = []string{Weekly, Monthly}

// sendHour is the hour of the day a scheduled report goes out.
const sendHour = 9

// Send is whom a scheduled report goes to, as a send names them (POST /api/v1/messages):
// people by external id, whole departments, the people on duty, chat groups; through
// the account or platform named (none: the default account, or the first group's).
type Send struct {
	Account     string   `json:"account,omitempty"`
	Platform    string   `json:"platform,omitempty"`
	Recipients  []string `json:"recipients,omitempty"`
	Departments []string `json:"departments,omitempty"`
	ToOnDuty    bool     `json:"to_on_duty,omitempty"`
	Groups      []string `json:"groups,omitempty"`
}

// Schedule sends one report every period as an ordinary notice.
type Schedule struct {
	ID     int64  `json:"id"`
	Report string `json:"report"`
	Period string `json:"period"`
	Send   Send   `gorm:"serializer:json" json:"send"`
	// LastPeriod is the last period sent: a weekly schedule's Monday (YYYY-MM-DD), a
	// monthly one's month (YYYY-MM); a new schedule starts with the period it was made
	// in, so its first report is the next.
	LastPeriod string    `json:"last_period"`
	CreatedBy  string    `json:"created_by"`
	Version    int       `json:"-"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"-"`
}

// TableName implements gorm's tabler.
func (Schedule) TableName() string { return "report_schedules" }

// ScheduleInput is a schedule as an admin submits it, through the console or the API.
type ScheduleInput struct {
	Report string
	Period string
	Send   Send
}

// slot is the time the latest report of a period fell due at or before now, the key of
// its period and the range it reports on (the week or month before).
func slot(period string, now time.Time, loc *time.Location) (due time.Time, key string, r Range) {
	t := now.In(loc)
	if period == Monthly {
		due = time.Date(t.Year(), t.Month(), 1, sendHour, 0, 0, 0, loc)
		if t.Before(due) {
			due = due.AddDate(0, -1, 0)
		}
		first := due.AddDate(0, -1, 0)
		r, _ = ParseRange(first.Format(time.DateOnly), due.AddDate(0, 0, -1).Format(time.DateOnly), now, loc)
		return due, due.Format("2006-01"), r
	}
	day := time.Date(t.Year(), t.Month(), t.Day(), sendHour, 0, 0, 0, loc)
	wd := int(day.Weekday()+6) % 7 // days since Monday
	due = day.AddDate(0, 0, -wd)
	if t.Before(due) {
		due = due.AddDate(0, 0, -7)
	}
	r, _ = ParseRange(due.AddDate(0, 0, -7).Format(time.DateOnly), due.AddDate(0, 0, -1).Format(time.DateOnly), now, loc)
	return due, due.Format(time.DateOnly), r
}

// scheduleOf validates in into a schedule: a report of Names, a period of Periods, and a
// send naming somebody (the people it names must be in the directory). A failure is a
// *kernel.FieldError naming the field.
func (a *Analyst) scheduleOf(ctx context.Context, in ScheduleInput) (*Schedule, error) {
	s := &Schedule{Report: strings.TrimSpace(in.Report), Period: strings.TrimSpace(in.Period), Send: in.Send}
	if !slices.Contains(Names, s.Report) {
		return nil, kernel.Invalid("report", "reports.invalid.report")
	}
	if !slices.Contains(Periods, s.Period) {
		return nil, kernel.Invalid("period", "reports.invalid.period")
	}
	clean := func(list []string) []string {
		var out []string
		for _, v := range list {
			if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		return out
	}
	to := &s.Send
	to.Account, to.Platform = strings.TrimSpace(to.Account), strings.TrimSpace(to.Platform)
	to.Recipients, to.Departments, to.Groups = clean(to.Recipients), clean(to.Departments), clean(to.Groups)
	if len(to.Recipients)+len(to.Departments)+len(to.Groups) == 0 && !to.ToOnDuty {
		return nil, kernel.Invalid("send", "reports.invalid.send")
	}
	if len(to.Recipients) > 0 {
		found, err := a.cfg.Staff.RecipientsByExternalIDs(ctx, to.Recipients)
		if err != nil {
			return nil, err
		}
		for _, id := range to.Recipients {
			if !slices.ContainsFunc(found, func(p directory.Recipient) bool { return p.ExternalID == id }) {
				return nil, kernel.Invalid("send.recipients", "reports.invalid.recipient", "ID", id)
			}
		}
	}
	return s, nil
}

// Schedules lists the report schedules, oldest first.
func (a *Analyst) Schedules(ctx context.Context) ([]Schedule, error) {
	return a.cfg.Store.Schedules(ctx)
}

// Schedule reads one schedule; kernel.ErrNotFound when there is none.
func (a *Analyst) Schedule(ctx context.Context, id int64) (*Schedule, error) {
	return a.cfg.Store.ScheduleByID(ctx, id)
}

// CreateSchedule validates and stores a new schedule, audited as done by by. Its first
// report is the next period's: one that fell due before it was made is not sent.
func (a *Analyst) CreateSchedule(ctx context.Context, by audit.Actor, in ScheduleInput) (*Schedule, error) {
	s, err := a.scheduleOf(ctx, in)
	if err != nil {
		return nil, err
	}
	_, s.LastPeriod, _ = slot(s.Period, a.now(), a.cfg.Location)
	s.CreatedBy = by.Name
	err = audit.RunOn(ctx, a.cfg.Store.k, by, a.cfg.Store.On, func(tx *Tallies, ch *audit.Change) error {
		if err := tx.InsertSchedule(ctx, s); err != nil {
			return err
		}
		ch.Audit("report_schedule.create", "report_schedule", strconv.FormatInt(s.ID, 10), scheduleParams(s))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// UpdateSchedule changes the schedule s, as the caller read it, to in: a compare-and-set
// on its version (kernel.ErrStateChanged when it changed since), audited as done by by.
// A schedule moved to another period starts with the next one, as a new schedule does;
// one that keeps its period keeps the last period it sent.
func (a *Analyst) UpdateSchedule(ctx context.Context, by audit.Actor, s *Schedule, in ScheduleInput) (*Schedule, error) {
	n, err := a.scheduleOf(ctx, in)
	if err != nil {
		return nil, err
	}
	n.ID, n.Version, n.CreatedBy, n.CreatedAt, n.LastPeriod = s.ID, s.Version, s.CreatedBy, s.CreatedAt, s.LastPeriod
	if n.Period != s.Period {
		_, n.LastPeriod, _ = slot(n.Period, a.now(), a.cfg.Location)
	}
	err = audit.RunOn(ctx, a.cfg.Store.k, by, a.cfg.Store.On, func(tx *Tallies, ch *audit.Change) error {
		if err := tx.UpdateSchedule(ctx, n); err != nil {
			return err
		}
		params := scheduleParams(n)
		before := scheduleParams(s)
		for _, k := range []string{"report", "period", "send_to", "on_duty"} {
			params["before_"+k] = before[k]
		}
		ch.Audit("report_schedule.update", "report_schedule", strconv.FormatInt(n.ID, 10), params)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return n, nil
}

// DeleteSchedule removes the schedule s as the caller read it, audited as done by by.
func (a *Analyst) DeleteSchedule(ctx context.Context, by audit.Actor, s *Schedule) error {
	return audit.RunOn(ctx, a.cfg.Store.k, by, a.cfg.Store.On, func(tx *Tallies, ch *audit.Change) error {
		if err := tx.DeleteSchedule(ctx, s); err != nil {
			return err
		}
		ch.Audit("report_schedule.delete", "report_schedule", strconv.FormatInt(s.ID, 10), scheduleParams(s))
		return nil
	})
}

// scheduleParams are a schedule's values for its audit entries: whom it sends to by
// name (send_to), and whether to the people on duty too (on_duty).
func scheduleParams(s *Schedule) audit.Params {
	to := slices.Concat(s.Send.Recipients, s.Send.Departments, s.Send.Groups)
	return audit.Params{"report": s.Report, "period": s.Period, "send_to": strings.Join(to, ", "),
		"on_duty": strconv.FormatBool(s.Send.ToOnDuty), "last_period": s.LastPeriod}
}

// SendDue sends every scheduled report whose time has come and whose period was not
// sent yet: a schedule missed while Herald was down is sent once, on the first pass
// after it starts, with the period that fell due last. Each period is taken by a
// compare-and-set of the schedule's last period, audited, before its notice goes out,
// so that of several processes one sends it; a notice that cannot be sent gives the
// period back (givePeriodBack) for the next pass. It returns how many it sent.
func (a *Analyst) SendDue(ctx context.Context) (int, error) {
	if a.cfg.Sender == nil {
		return 0, errNoSender
	}
	list, err := a.cfg.Store.Schedules(ctx)
	if err != nil {
		return 0, err
	}
	sent := 0
	var errs []error
	for i := range list {
		s := &list[i]
		_, key, r := slot(s.Period, a.now(), a.cfg.Location)
		if s.LastPeriod >= key {
			continue
		}
		previous := s.LastPeriod
		subject, text, err := a.summary(ctx, s.Report, r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		err = audit.RunOn(ctx, a.cfg.Store.k, audit.System("report-schedule"), a.cfg.Store.On, func(tx *Tallies, ch *audit.Change) error {
			if err := tx.ClaimPeriod(ctx, s.ID, s.LastPeriod, key); err != nil {
				return err
			}
			s.LastPeriod = key
			ch.Audit("report_schedule.sent", "report_schedule", strconv.FormatInt(s.ID, 10), scheduleParams(s))
			return nil
		})
		if errors.Is(err, kernel.ErrStateChanged) {
			continue // another process took the period
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := a.cfg.Sender.SendReport(ctx, s.Send, subject, text); err != nil {
			a.cfg.Log.Warn("report schedule: send", "schedule", s.ID, "period", key, "error", err)
			errs = append(errs, err, a.givePeriodBack(ctx, s, previous))
			continue
		}
		a.cfg.Log.Info("report schedule sent", "schedule", s.ID, "report", s.Report, "period", key)
		sent++
	}
	return sent, errors.Join(errs...)
}

// givePeriodBack moves a schedule's last period back to previous after its notice could
// not be sent, a compare-and-set audited as report_schedule.send_failed, so that the next
// pass sends the period again; nil when another process moved the schedule meanwhile.
func (a *Analyst) givePeriodBack(ctx context.Context, s *Schedule, previous string) error {
	failed := s.LastPeriod
	err := audit.RunOn(ctx, a.cfg.Store.k, audit.System("report-schedule"), a.cfg.Store.On, func(tx *Tallies, ch *audit.Change) error {
		if err := tx.ClaimPeriod(ctx, s.ID, failed, previous); err != nil {
			return err
		}
		s.LastPeriod = previous
		params := scheduleParams(s)
		params["failed_period"] = failed
		ch.Audit("report_schedule.send_failed", "report_schedule", strconv.FormatInt(s.ID, 10), params)
		return nil
	})
	if errors.Is(err, kernel.ErrStateChanged) {
		return nil
	}
	return err
}

// Summary is the subject and text of a report's notice over r: its figures in a few
// lines and a link to the page, in the service's language.
func (a *Analyst) summary(ctx context.Context, report string, r Range) (subject, text string, err error) {
	lang := a.cfg.Language
	if lang == "" {
		lang = i18n.Chinese
	}
	link := strings.TrimRight(a.cfg.PublicURL, "/") + "/reports?" + url.Values{"from": {r.From}, "to": {r.To}}.Encode()
	var body string
	switch report {
	case ReportResponse:
		rep, err := a.Response(ctx, audit.System("report-schedule"), r, ByPolicy)
		if err != nil {
			return "", "", err
		}
		o := rep.Overall
		body = i18n.In(lang, "reports.summary.response", "Alerts", o.Alerts, "Acknowledged", o.Acknowledged,
			"Rate", fmt.Sprintf("%.1f%%", o.AckRate*100), "Median", Seconds(o.AckMedian, "-"), "P90", Seconds(o.AckP90, "-"),
			"ResolveMedian", Seconds(o.ResolveMedian, "-"), "Escalated", o.Escalated, "Exhausted", o.Exhausted)
	case ReportInterruptions:
		rep, err := a.Interruptions(ctx, audit.System("report-schedule"), r, "")
		if err != nil {
			return "", "", err
		}
		t := rep.Total
		body = i18n.In(lang, "reports.summary.interruptions", "Notices", t.Notices, "Interruptions", t.Interruptions,
			"Work", t.Work, "Rest", t.Rest, "Sleep", t.Sleep, "People", len(rep.People))
	default:
		rep, err := a.Duty(ctx, r)
		if err != nil {
			return "", "", err
		}
		t := rep.Total
		body = i18n.In(lang, "reports.summary.duty", "Total", t.Total, "Workday", t.Workday, "Weekend", t.Weekend,
			"Holiday", t.Holiday, "Makeup", t.MakeupWorkday, "People", len(rep.People))
	}
	subject = i18n.In(lang, "reports.summary.subject", "Report", i18n.In(lang, "reports.name."+report), "From", r.From, "To", r.To)
	return subject, subject + "\n" + body + "\n" + link, nil
}
