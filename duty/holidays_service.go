package duty

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"herald/audit"
	"herald/kernel"
)

// Where a batch of holiday entries comes from, as ImportHolidays records it.
const (
	HolidaysFromCSV      = "csv"      // the holiday CSV import
	HolidaysFromNational = "national" // the national holiday calendar import
)

// SetHoliday records a day off or a make-up workday, replacing the entry its date had;
// audited with what it was. A validation failure is a *kernel.FieldError (date, kind,
// as_weekday, name).
func (d *Planner) SetHoliday(ctx context.Context, by audit.Actor, hd Holiday) error {
	return d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		if err := ValidateHoliday(&hd); err != nil {
			return err
		}
		changes, err := tx.HolidayChanges(ctx, []Holiday{hd})
		if err != nil {
			return err
		}
		if err := tx.SetHoliday(ctx, &hd); err != nil {
			return err
		}
		p := holidayParams(hd)
		if old := changes[0].Old; old != nil {
			for k, v := range holidayParams(*old) {
				if k != "date" {
					p["before_"+k] = v
				}
			}
		}
		ch.Audit("duty.holiday.set", "duty", hd.Date, p)
		return nil
	})
}

// holidayParams names a holiday entry for its audit sentence.
func holidayParams(hd Holiday) audit.Params {
	p := audit.Params{"date": hd.Date, "kind": hd.Kind, "name": hd.Name}
	if hd.AsWeekday != nil {
		p["as_weekday"] = strconv.Itoa(*hd.AsWeekday)
	}
	return p
}

// DeleteHoliday removes the holiday entry of a date, audited with what it was.
// kernel.ErrNotFound: the date has none.
func (d *Planner) DeleteHoliday(ctx context.Context, by audit.Actor, date string) error {
	return d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		list, err := tx.HolidaysBetween(ctx, date, date)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return fmt.Errorf("duty: holiday %s: %w", date, kernel.ErrNotFound)
		}
		if err := tx.DeleteHoliday(ctx, date); err != nil {
			return err
		}
		ch.Audit("duty.holiday.delete", "duty", date, holidayParams(list[0]))
		return nil
	})
}

// SetHolidays saves several holiday entries (the API's list), each replacing its
// date's, all or none; audited once with the dates and how many were new or changed.
// A failure names the entry ("[3].date"); more than MaxHolidays entries is a
// failure of "holidays".
func (d *Planner) SetHolidays(ctx context.Context, by audit.Actor, list []Holiday) error {
	return d.setHolidays(ctx, by, "duty.holidays.set", list, nil)
}

// ImportHolidays is SetHolidays for an import: from says which (HolidaysFromCSV or
// HolidaysFromNational), and the entry's action is duty.holidays.import.
func (d *Planner) ImportHolidays(ctx context.Context, by audit.Actor, list []Holiday, from string) error {
	return d.setHolidays(ctx, by, "duty.holidays.import", list, audit.Params{"source": from})
}

func (d *Planner) setHolidays(ctx context.Context, by audit.Actor, action string, list []Holiday, params audit.Params) error {
	return d.change(ctx, by, func(tx *Schedule, ch *audit.Change) error {
		if len(list) > MaxHolidays {
			return kernel.Invalid("holidays", "duty.invalid.too_many", "Max", MaxHolidays)
		}
		effects, err := tx.HolidayEffects(ctx, list)
		if err != nil {
			return err
		}
		if err := tx.SetHolidays(ctx, list); err != nil {
			return err
		}
		counts := map[string]int{}
		for _, e := range effects {
			counts[e]++
		}
		p := audit.Params{"count": strconv.Itoa(len(list)), "new": strconv.Itoa(counts[kernel.EffectCreate]),
			"changed": strconv.Itoa(counts[kernel.EffectUpdate])}
		if len(list) > 0 {
			dates := make([]string, len(list))
			for i, hd := range list {
				dates[i] = hd.Date
			}
			p["from"], p["to"] = slices.Min(dates), slices.Max(dates)
		}
		for k, v := range params {
			p[k] = v
		}
		ch.Audit(action, "duty", "holidays", p)
		return nil
	})
}
