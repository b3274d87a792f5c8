package models

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"herald/kernel"
)

// SettingDutyReminder is the setting that holds the duty reminder (ReminderConfig as
// JSON).
const SettingDutyReminder = "duty_reminder"

// ReminderConfig is the duty reminder: at Time (HH:MM in HERALD_TIMEZONE) each day,
// Herald sends the people on duty the next day a message of Template through Account,
// as an ordinary batch.
type ReminderConfig struct {
	Enabled  bool   `json:"enabled"`
	Time     string `json:"time"`
	Account  string `json:"account"`
	Template string `json:"template"`
}

// DefaultReminderTime is when a reminder goes out unless chosen otherwise.
const DefaultReminderTime = "17:00"

// At returns the reminder's time on the day of now, in now's location.
func (c ReminderConfig) At(now time.Time) (time.Time, error) {
	t, err := time.Parse("15:04", c.Time)
	if err != nil {
		return time.Time{}, kernel.Invalid("time", "reminder.invalid.time")
	}
	return time.Date(now.Year(), now.Month(), now.Day(), t.Hour(), t.Minute(), 0, 0, now.Location()), nil
}

// DutyReminder records that the people on duty on Date were reminded, by batch BatchID
// ("" when nobody was on duty).
type DutyReminder struct {
	Date      string `gorm:"primaryKey"`
	BatchID   string
	CreatedAt time.Time
}

// TableName is the reminders' table.
func (DutyReminder) TableName() string { return "duty_reminders" }

// DutyReminderConfig returns the duty reminder's configuration (off with the default
// time when never set).
func (s *Intake) DutyReminderConfig(ctx context.Context) (ReminderConfig, error) {
	cfg := ReminderConfig{Time: DefaultReminderTime}
	var list []kernel.Setting
	if err := s.k.Reader(ctx).Where("name = ?", SettingDutyReminder).Limit(1).Find(&list).Error; err != nil {
		return cfg, fmt.Errorf("models: setting %s: %w", SettingDutyReminder, err)
	}
	if len(list) == 0 {
		return cfg, nil
	}
	if err := json.Unmarshal([]byte(list[0].Value), &cfg); err != nil {
		return cfg, fmt.Errorf("models: setting %s: %w", SettingDutyReminder, err)
	}
	return cfg, nil
}

// SetDutyReminderConfig saves the duty reminder's settings, recording by as who last
// changed them. The service layer checks the account and template and audits the change
// (dispatch.SetDutyReminder); a time that is not HH:MM is refused here too.
func (s *Intake) SetDutyReminderConfig(ctx context.Context, cfg ReminderConfig, by string) error {
	if _, err := cfg.At(time.Now()); err != nil {
		return err
	}
	value, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	row := kernel.Setting{Name: SettingDutyReminder, Value: string(value), UpdatedBy: by, UpdatedAt: kernel.Now()}
	err = s.k.Writer(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "name"}},
		DoUpdates: clause.AssignmentColumns([]string{"value", "updated_by", "updated_at"})}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("models: set %s: %w", SettingDutyReminder, err)
	}
	return nil
}

// DutyReminderOf returns the reminder of a date, or nil if there was none yet.
func (s *Intake) DutyReminderOf(ctx context.Context, date string) (*DutyReminder, error) {
	var list []DutyReminder
	if err := s.k.Reader(ctx).Where("date = ?", date).Limit(1).Find(&list).Error; err != nil {
		return nil, fmt.Errorf("models: reminder %s: %w", date, err)
	}
	if len(list) == 0 {
		return nil, nil
	}
	return &list[0], nil
}

// RecentDutyReminders lists the last reminders, newest first.
func (s *Intake) RecentDutyReminders(ctx context.Context, n int) ([]DutyReminder, error) {
	var list []DutyReminder
	if err := s.k.Reader(ctx).Order("date DESC").Limit(n).Find(&list).Error; err != nil {
		return nil, fmt.Errorf("models: reminders: %w", err)
	}
	return list, nil
}

// MarkDutyReminder records a date as reminded without a batch (nobody was on duty). It
// returns false when the date was already recorded.
func (s *Intake) MarkDutyReminder(ctx context.Context, date string) (bool, error) {
	err := s.k.Writer(ctx).Create(&DutyReminder{Date: date}).Error
	if kernel.IsDuplicate(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("models: mark reminder %s: %w", date, err)
	}
	return true, nil
}

// createReminder writes a reminder row in a batch's transaction: a second reminder of
// the same date fails it with ErrDuplicate.
func createReminder(tx *gorm.DB, r *DutyReminder) error {
	if err := tx.Create(r).Error; err != nil {
		if kernel.IsDuplicate(err) {
			return fmt.Errorf("models: reminder %s: %w", r.Date, kernel.ErrDuplicate)
		}
		return fmt.Errorf("models: reminder %s: %w", r.Date, err)
	}
	return nil
}
