package dispatch

import (
	"context"
	"errors"
	"slices"
	"time"

	"herald/audit"
	"herald/duty"
	"herald/kernel"
	"herald/models"
	"herald/templates"
)

// ReminderVariables are the variables a reminder gives its template: only those the
// template declares are passed.
var ReminderVariables = []string{"date"}

// CheckReminderTemplate reports whether a template can be a reminder's: it may declare
// no variable but those in ReminderVariables.
func CheckReminderTemplate(t *templates.Template) error {
	for _, v := range t.VariableNames() {
		if !slices.Contains(ReminderVariables, v) {
			return kernel.Invalid("template", "reminder.invalid.variables", "Name", v)
		}
	}
	return nil
}

// RemindIfDue sends the duty reminder when it is due: once the day's reminder time has
// come (in the dispatcher's time zone), the people on duty tomorrow get a message of the
// reminder's template through its account, as an ordinary batch of source "reminder"
// with its own messages, limits and retries. Each date is reminded once, whichever
// process gets there first; a date nobody is on duty is recorded without a batch. It
// returns the batch sent, or nil.
func (d *Dispatcher) RemindIfDue(ctx context.Context) (*Result, error) {
	cfg, err := d.store.Intake().DutyReminderConfig(ctx)
	if err != nil || !cfg.Enabled {
		return nil, err
	}
	now := d.now().In(d.loc)
	at, err := cfg.At(now)
	if err != nil || now.Before(at) {
		return nil, err
	}
	tomorrow := time.Date(now.Year(), now.Month(), now.Day()+1, 12, 0, 0, 0, d.loc)
	date, _ := duty.DateOf(tomorrow, d.loc)
	if done, err := d.store.Intake().DutyReminderOf(ctx, date); err != nil || done != nil {
		return nil, err
	}
	roster, err := d.Duty().RosterOn(ctx, tomorrow)
	if err != nil {
		return nil, err
	}
	if roster.Empty() {
		_, err := d.store.Intake().MarkDutyReminder(ctx, date)
		d.log.Info("duty reminder: nobody is on duty", "date", date)
		return nil, err
	}
	ids := make([]int64, 0, len(roster.OnDuty))
	for id := range roster.OnDuty {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	makers, err := d.reminderMakers(ctx, cfg.Template)
	if err != nil {
		return nil, err
	}
	req := Request{Source: models.SourceReminder, Actor: "duty-reminder", Makers: makers, Account: cfg.Account, Template: cfg.Template,
		RecipientIDs: ids, DutyDate: &tomorrow, Reminder: date, Variables: map[string]string{}, Priority: models.PriorityNormal}
	if t, err := d.store.Templates().TemplateByName(ctx, cfg.Template); err == nil && slices.Contains(t.VariableNames(), "date") {
		req.Variables["date"] = date
	}
	res, err := d.Submit(ctx, req)
	if errors.Is(err, kernel.ErrDuplicate) {
		return nil, nil // another process reminded the date meanwhile
	}
	if err != nil {
		return nil, err
	}
	d.log.Info("duty reminder sent", "date", date, "batch", res.Batch.ID, "messages", len(res.Messages))
	return res, nil
}

// reminderMakers are the makers of a reminder's batch: whoever last changed the
// reminder's settings and whoever last wrote its template. The reminder sends what
// they chose, to people they chose the day of, so none of them may approve it.
func (d *Dispatcher) reminderMakers(ctx context.Context, template string) ([]string, error) {
	var makers []string
	for _, last := range []struct {
		actions []string
		target  string
	}{
		{[]string{"duty.reminder.set"}, ""},
		{[]string{"template.create", "template.update"}, template},
	} {
		e, err := d.store.Intake().LastChange(ctx, last.actions, last.target)
		if err != nil {
			return nil, err
		}
		if e == nil {
			continue
		}
		people, err := d.store.Intake().PeopleOf(ctx, e)
		if err != nil {
			return nil, err
		}
		for _, p := range people {
			if !slices.Contains(makers, p) {
				makers = append(makers, p)
			}
		}
	}
	return makers, nil
}

// SetDutyReminder saves the duty reminder's settings, recording by as who last changed
// them, audited with the settings before and after. An enabled reminder needs an
// existing account and a template whose variables a reminder can fill.
func (d *Dispatcher) SetDutyReminder(ctx context.Context, by audit.Actor, cfg models.ReminderConfig) error {
	return d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		// A template chosen that a reminder cannot fill is the first thing to say; then
		// the fields in the form's order.
		if cfg.Template != "" {
			t, err := tx.Templates().TemplateByName(ctx, cfg.Template)
			if errors.Is(err, kernel.ErrNotFound) {
				return kernel.Invalid("template", "reminder.invalid.template")
			}
			if err != nil {
				return err
			}
			if err := CheckReminderTemplate(t); err != nil {
				return err
			}
		}
		if _, err := cfg.At(time.Now()); err != nil {
			return err
		}
		if cfg.Enabled || cfg.Account != "" {
			_, err := tx.Sending().AccountByName(ctx, cfg.Account)
			if errors.Is(err, kernel.ErrNotFound) {
				return kernel.Invalid("account", "reminder.invalid.account")
			}
			if err != nil {
				return err
			}
		}
		if cfg.Enabled && cfg.Template == "" {
			return kernel.Invalid("template", "reminder.invalid.template")
		}
		before, err := tx.Intake().DutyReminderConfig(ctx)
		if err != nil {
			return err
		}
		if err := tx.Intake().SetDutyReminderConfig(ctx, cfg, by.Name); err != nil {
			return err
		}
		p := reminderParams(cfg)
		for k, v := range reminderParams(before) {
			p["before_"+k] = v
		}
		ch.Audit("duty.reminder.set", "setting", models.SettingDutyReminder, p)
		return nil
	})
}

// reminderParams names the reminder's settings for its audit sentence.
func reminderParams(cfg models.ReminderConfig) audit.Params {
	on := "off"
	if cfg.Enabled {
		on = "on"
	}
	return audit.Params{"enabled": on, "time": cfg.Time, "account": cfg.Account, "template": cfg.Template}
}
