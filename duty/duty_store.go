package duty

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"herald/kernel"
)

// DutySlot puts a recipient on the weekly roster of a weekday (1 = Monday … 7 = Sunday).
type DutySlot struct {
	ID          int64
	Weekday     int
	RecipientID int64
	CreatedAt   time.Time
}

// DutyOverride adds or removes a recipient from the roster of one date (YYYY-MM-DD).
type DutyOverride struct {
	ID          int64
	Date        string
	RecipientID int64
	Action      string // OverrideAdd or OverrideRemove
	Note        string
	SwapID      *int64 // the swap that made it, if any
	CreatedAt   time.Time
}

// Holiday marks a date as a day off (empty weekly roster) or a make-up workday that uses
// the roster of weekday AsWeekday.
type Holiday struct {
	ID        int64
	Date      string
	Kind      string // HolidayOff or HolidayWorkday
	AsWeekday *int
	Name      string
	CreatedAt time.Time
}

// AddDutySlot puts a recipient on a weekday's roster; adding an existing slot is a no-op.
func (s *Schedule) AddDutySlot(ctx context.Context, weekday int, recipientID int64) error {
	if weekday < 1 || weekday > 7 {
		return kernel.Invalid("weekday", "duty.invalid.weekday")
	}
	err := s.k.Writer(ctx).Create(&DutySlot{Weekday: weekday, RecipientID: recipientID}).Error
	if err != nil && !kernel.IsDuplicate(err) {
		return fmt.Errorf("duty: add duty slot: %w", err)
	}
	return nil
}

// Holiday kinds.
const (
	HolidayOff     = "off"
	HolidayWorkday = "workday"
)

// Override actions.
const (
	OverrideAdd    = "add"
	OverrideRemove = "remove"
)

// MaxHolidays bounds the holiday entries saved at once (an import, the API's list):
// ten years of every date a notice can name, and far from what fits in memory.
const MaxHolidays = 2000

// ValidDate checks a YYYY-MM-DD date.
func ValidDate(field, date string) error {
	if _, err := time.Parse(time.DateOnly, date); err != nil || len(date) != 10 {
		return kernel.Invalid(field, "validation.date")
	}
	return nil
}

// SetOverride adds or removes a recipient on one date, replacing an earlier override of
// the same person and date.
func (s *Schedule) SetOverride(ctx context.Context, o *DutyOverride) error {
	if err := ValidDate("date", o.Date); err != nil {
		return err
	}
	if o.Action != OverrideAdd && o.Action != OverrideRemove {
		return kernel.Invalid("action", "duty.invalid.action")
	}
	if utf8.RuneCountInString(o.Note) > 255 {
		return kernel.Invalid("note", "duty.invalid.too_long", "Max", 255)
	}
	if err := kernel.CheckText("note", o.Note, false); err != nil {
		return err
	}
	return s.k.Tx(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("date = ? AND recipient_id = ?", o.Date, o.RecipientID).Delete(&DutyOverride{}).Error; err != nil {
			return fmt.Errorf("duty: replace override: %w", err)
		}
		o.ID = 0
		if err := tx.Create(o).Error; err != nil {
			return fmt.Errorf("duty: create override: %w", err)
		}
		return nil
	})
}

// DeleteOverride removes a recipient's override on a date.
func (s *Schedule) DeleteOverride(ctx context.Context, date string, recipientID int64) error {
	res := s.k.Writer(ctx).Where("date = ? AND recipient_id = ?", date, recipientID).Delete(&DutyOverride{})
	if res.Error != nil {
		return fmt.Errorf("duty: delete override: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("duty: override %s: %w", date, kernel.ErrNotFound)
	}
	return nil
}

// SetHoliday records a day off or a make-up workday, replacing an earlier entry of the date.
func (s *Schedule) SetHoliday(ctx context.Context, h *Holiday) error {
	if err := validateHoliday(h); err != nil {
		return err
	}
	return s.SetHolidays(ctx, []Holiday{*h})
}

func validateHoliday(h *Holiday) error {
	if err := ValidDate("date", h.Date); err != nil {
		return err
	}
	switch h.Kind {
	case HolidayOff:
		h.AsWeekday = nil
	case HolidayWorkday:
		if h.AsWeekday == nil || *h.AsWeekday < 1 || *h.AsWeekday > 7 {
			return kernel.Invalid("as_weekday", "duty.invalid.as_weekday")
		}
	default:
		return kernel.Invalid("kind", "duty.invalid.kind")
	}
	// Characters, not bytes: the column is VARCHAR(100) of utf8mb4 on MySQL, and a
	// Chinese holiday name takes three bytes a character.
	if utf8.RuneCountInString(h.Name) > 100 {
		return kernel.Invalid("name", "duty.invalid.too_long", "Max", 100)
	}
	return kernel.CheckText("name", h.Name, false)
}

// DeleteHoliday removes the holiday entry of a date.
func (s *Schedule) DeleteHoliday(ctx context.Context, date string) error {
	res := s.k.Writer(ctx).Where("date = ?", date).Delete(&Holiday{})
	if res.Error != nil {
		return fmt.Errorf("duty: delete holiday: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("duty: holiday %s: %w", date, kernel.ErrNotFound)
	}
	return nil
}

// Week is the weekly roster: weekday (1–7) → recipient ids.
type Week map[int][]int64

// DutyWeek returns the weekly roster.
func (s *Schedule) DutyWeek(ctx context.Context) (Week, error) {
	var slots []DutySlot
	if err := s.k.Reader(ctx).Order("weekday, recipient_id").Find(&slots).Error; err != nil {
		return nil, fmt.Errorf("duty: duty week: %w", err)
	}
	w := Week{}
	for _, sl := range slots {
		w[sl.Weekday] = append(w[sl.Weekday], sl.RecipientID)
	}
	return w, nil
}

// ReplaceDutyWeek replaces the whole weekly roster in one transaction and returns the
// roster it replaced, for the audit log.
func (s *Schedule) ReplaceDutyWeek(ctx context.Context, w Week) (before Week, err error) {
	for day := range w {
		if day < 1 || day > 7 {
			return nil, kernel.Invalid("weekday", "duty.invalid.not_weekday", "Day", day)
		}
	}
	before = Week{}
	return before, s.k.Tx(ctx, func(tx *gorm.DB) error {
		var old []DutySlot
		if err := tx.Order("weekday, recipient_id").Find(&old).Error; err != nil {
			return fmt.Errorf("duty: read duty week: %w", err)
		}
		for _, sl := range old {
			before[sl.Weekday] = append(before[sl.Weekday], sl.RecipientID)
		}
		if err := tx.Where("1 = 1").Delete(&DutySlot{}).Error; err != nil {
			return fmt.Errorf("duty: clear duty week: %w", err)
		}
		var slots []DutySlot
		for day, ids := range w {
			seen := map[int64]bool{}
			for _, id := range ids {
				if !seen[id] {
					seen[id] = true
					slots = append(slots, DutySlot{Weekday: day, RecipientID: id})
				}
			}
		}
		if len(slots) == 0 {
			return nil
		}
		if err := tx.Create(&slots).Error; err != nil {
			return fmt.Errorf("duty: write duty week: %w", err)
		}
		return nil
	})
}

// RemoveDutySlot takes a recipient off a weekday's roster.
func (s *Schedule) RemoveDutySlot(ctx context.Context, weekday int, recipientID int64) error {
	err := s.k.Writer(ctx).Where("weekday = ? AND recipient_id = ?", weekday, recipientID).Delete(&DutySlot{}).Error
	if err != nil {
		return fmt.Errorf("duty: remove duty slot: %w", err)
	}
	return nil
}

// OverridesBetween lists overrides from one date to another, inclusive.
func (s *Schedule) OverridesBetween(ctx context.Context, from, to string) ([]DutyOverride, error) {
	var out []DutyOverride
	if err := s.k.Reader(ctx).Where("date >= ? AND date <= ?", from, to).Order("date, id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("duty: overrides: %w", err)
	}
	return out, nil
}

// HolidayYears lists the years that have holiday entries, in order.
func (s *Schedule) HolidayYears(ctx context.Context) ([]int, error) {
	var dates []string
	// One date a year is enough: the first of each year's entries.
	if err := s.k.Reader(ctx).Model(&Holiday{}).Select("MIN(date)").Group("SUBSTR(date, 1, 4)").Order("MIN(date)").Pluck("MIN(date)", &dates).Error; err != nil {
		return nil, fmt.Errorf("duty: holiday years: %w", err)
	}
	years := make([]int, 0, len(dates))
	for _, d := range dates {
		if y, err := strconv.Atoi(d[:min(4, len(d))]); err == nil {
			years = append(years, y)
		}
	}
	return years, nil
}

// HolidaysBetween lists holiday entries from one date to another, inclusive.
func (s *Schedule) HolidaysBetween(ctx context.Context, from, to string) ([]Holiday, error) {
	var out []Holiday
	if err := s.k.Reader(ctx).Where("date >= ? AND date <= ?", from, to).Order("date").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("duty: holidays: %w", err)
	}
	return out, nil
}

// SetHolidays saves several holiday entries in one transaction, each replacing its date's.
func (s *Schedule) SetHolidays(ctx context.Context, list []Holiday) error {
	for i := range list {
		if err := validateHoliday(&list[i]); err != nil {
			var fe *kernel.FieldError
			if errors.As(err, &fe) {
				at := *fe
				at.Field = fmt.Sprintf("[%d].%s", i, fe.Field)
				return &at
			}
			return err
		}
	}
	return s.k.Tx(ctx, func(tx *gorm.DB) error {
		for i := range list {
			h := &list[i]
			if err := tx.Where("date = ?", h.Date).Delete(&Holiday{}).Error; err != nil {
				return fmt.Errorf("duty: replace holiday: %w", err)
			}
			h.ID = 0
			if err := tx.Create(h).Error; err != nil {
				return fmt.Errorf("duty: create holiday %s: %w", h.Date, err)
			}
		}
		return nil
	})
}
