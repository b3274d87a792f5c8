package reports

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"herald/kernel"
	"herald/models"
)

// Tallies holds the reports' queries: each reads one range of time through an index
// made for it (migration 00063) and adds up in SQL what can be added up there, and the
// report schedules' table.
type Tallies struct {
	// k is the database, or the database bound to a transaction (On).
	k *kernel.DB
}

// NewStore is the reports' queries on k.
func NewStore(k *kernel.DB) *Tallies { return &Tallies{k: k} }

// On is the store on tx, the database bound to a transaction (kernel.DB.InTx).
func (s *Tallies) On(tx *kernel.DB) *Tallies { return &Tallies{k: tx} }

// alertTimes is what the response report reads of one alert.
type alertTimes struct {
	ID             int64
	Policy         string
	Source         string
	State          string
	Step           int
	Round          int
	OpenedAt       time.Time
	AcknowledgedAt *time.Time
	ResolvedAt     *time.Time
}

// AlertTimes reads the alerts opened in [from, to), from the index idx_alerts_report
// alone, straight from the driver (a year holds a hundred thousand); ownKey, when not 0,
// keeps the alerts of that API key's batches (the rule models.OwnBatches).
func (s *Tallies) AlertTimes(ctx context.Context, from, to time.Time, ownKey int64) ([]alertTimes, error) {
	q := s.k.Reader(ctx).Table("alerts").
		Select("id, policy, source, state, step, round, opened_at, acknowledged_at, resolved_at").
		Where("opened_at >= ? AND opened_at < ?", from, to)
	if ownKey != 0 {
		q = q.Where("batch_id IN ("+models.OwnBatches+")", sql.Named("key", ownKey))
	}
	rows, err := q.Rows()
	if err != nil {
		return nil, fmt.Errorf("reports: alerts opened %s to %s: %w", from, to, err)
	}
	defer rows.Close()
	var out []alertTimes
	for rows.Next() {
		var a alertTimes
		var acked, resolved sql.NullTime
		if err := rows.Scan(&a.ID, &a.Policy, &a.Source, &a.State, &a.Step, &a.Round, &a.OpenedAt, &acked, &resolved); err != nil {
			return nil, fmt.Errorf("reports: alerts opened %s to %s: %w", from, to, err)
		}
		if acked.Valid {
			a.AcknowledgedAt = &acked.Time
		}
		if resolved.Valid {
			a.ResolvedAt = &resolved.Time
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reports: alerts opened %s to %s: %w", from, to, err)
	}
	return out, nil
}

// alertPerson is one person an alert's notices went to.
type alertPerson struct {
	AlertID     int64
	RecipientID int64
}

// AlertPeople returns whom the notices of the alerts went to, one pair per alert and
// person. It reads the stretch of idx_messages_alert_recipient from the lowest of the
// alerts' ids to the highest, one range and no join (alerts are numbered as they open,
// so a range of dates is a stretch of ids), and keeps the pairs of these alerts; posts
// to chat groups name no person and are left out.
func (s *Tallies) AlertPeople(ctx context.Context, alerts []alertTimes) ([]alertPerson, error) {
	if len(alerts) == 0 {
		return nil, nil
	}
	ids := make(map[int64]bool, len(alerts))
	lo, hi := alerts[0].ID, alerts[0].ID
	for _, a := range alerts {
		ids[a.ID] = true
		lo, hi = min(lo, a.ID), max(hi, a.ID)
	}
	rows, err := s.k.Reader(ctx).Raw("SELECT alert_id, recipient_id FROM messages WHERE alert_id >= ? AND alert_id <= ? AND recipient_id > 0 "+
		"ORDER BY alert_id, recipient_id", lo, hi).Rows()
	if err != nil {
		return nil, fmt.Errorf("reports: people of alerts %d to %d: %w", lo, hi, err)
	}
	defer rows.Close()
	var out []alertPerson
	for rows.Next() {
		var p alertPerson
		if err := rows.Scan(&p.AlertID, &p.RecipientID); err != nil {
			return nil, fmt.Errorf("reports: people of alerts %d to %d: %w", lo, hi, err)
		}
		if !ids[p.AlertID] || len(out) > 0 && out[len(out)-1] == p {
			continue
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reports: people of alerts %d to %d: %w", lo, hi, err)
	}
	return out, nil
}

// delivered is one notice delivered to a person: to whom, and when.
type delivered struct {
	RecipientID int64
	SentAt      time.Time
}

// deliveredStatuses are the states of a notice that reached its person: sent, and sent
// and since recalled (the person was interrupted all the same). A delivered notice
// leaves them only for the other, so a closed day's tally never changes.
var deliveredStatuses = []models.Status{models.StatusSent, models.StatusRecalled}

// Delivered reads the notices delivered in [from, to), by person and then time, through
// idx_messages_sent_report; ownKey, when not 0, keeps the notices of that API key's
// batches and of the alerts they opened.
func (s *Tallies) Delivered(ctx context.Context, from, to time.Time, ownKey int64) ([]delivered, error) {
	q := s.k.Reader(ctx).Table("messages").Select("recipient_id, sent_at").
		Where("status IN ? AND sent_at >= ? AND sent_at < ? AND recipient_id > 0", deliveredStatuses, from, to)
	if ownKey != 0 {
		q = q.Where("(batch_id IN ("+models.OwnBatches+") OR alert_id IN ("+models.OwnAlerts+"))", sql.Named("key", ownKey))
	}
	var out []delivered
	if err := q.Order("recipient_id, sent_at").Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("reports: notices delivered %s to %s: %w", from, to, err)
	}
	return out, nil
}

// FirstDelivered is when the earliest notice still recorded was delivered; zero when
// none was.
func (s *Tallies) FirstDelivered(ctx context.Context) (time.Time, error) {
	var first time.Time
	for _, st := range deliveredStatuses {
		var at []time.Time
		if err := s.k.Reader(ctx).Table("messages").Where("status = ? AND sent_at IS NOT NULL", st).
			Order("sent_at").Limit(1).Pluck("sent_at", &at).Error; err != nil {
			return time.Time{}, fmt.Errorf("reports: first notice delivered: %w", err)
		}
		if len(at) == 1 && (first.IsZero() || at[0].Before(first)) {
			first = at[0]
		}
	}
	return first, nil
}

// NoticeDay is a row of notice_days (migration 00067): one person's tally of one closed
// date in the time zone named, the minutes at which interruptions began written as
// "467,1203". What the report reads of it is a noticeDay.
type NoticeDay struct {
	Zone        string `gorm:"primaryKey"`
	LocalDay    string `gorm:"primaryKey"`
	RecipientID int64  `gorm:"primaryKey"`
	Notices     int
	Starts      string
}

// TableName implements gorm's tabler.
func (NoticeDay) TableName() string { return "notice_days" }

// TalliedDay is a row of notice_days_tallied: a closed date whose tally is stored, also
// when nobody was notified that day.
type TalliedDay struct {
	Zone      string `gorm:"primaryKey"`
	LocalDay  string `gorm:"primaryKey"`
	TalliedAt time.Time
}

// TableName implements gorm's tabler.
func (TalliedDay) TableName() string { return "notice_days_tallied" }

// noticeDay is one person's tally of one local date: the notices delivered to them and
// the minutes of the day at which an interruption began, ascending.
type noticeDay struct {
	LocalDay    string
	RecipientID int64
	Notices     int
	Starts      []int
}

// TalliedDays returns the dates from..to (YYYY-MM-DD, both included) whose tally in zone
// is stored.
func (s *Tallies) TalliedDays(ctx context.Context, zone, from, to string) (map[string]bool, error) {
	var days []string
	if err := s.k.Reader(ctx).Model(&TalliedDay{}).Where("zone = ? AND local_day >= ? AND local_day <= ?", zone, from, to).
		Pluck("local_day", &days).Error; err != nil {
		return nil, fmt.Errorf("reports: tallied days %s to %s: %w", from, to, err)
	}
	out := make(map[string]bool, len(days))
	for _, d := range days {
		out[d] = true
	}
	return out, nil
}

// StoredDays reads the stored tallies of the dates from..to in zone: a row per person and
// date on which they were notified, read straight from the driver (a year of three
// hundred people is a hundred thousand rows).
func (s *Tallies) StoredDays(ctx context.Context, zone, from, to string) ([]noticeDay, error) {
	rows, err := s.k.Reader(ctx).Raw("SELECT local_day, recipient_id, notices, starts FROM notice_days "+
		"WHERE zone = ? AND local_day >= ? AND local_day <= ?", zone, from, to).Rows()
	if err != nil {
		return nil, fmt.Errorf("reports: tallies %s to %s: %w", from, to, err)
	}
	defer rows.Close()
	var out []noticeDay
	for rows.Next() {
		var d noticeDay
		var starts string
		if err := rows.Scan(&d.LocalDay, &d.RecipientID, &d.Notices, &starts); err != nil {
			return nil, fmt.Errorf("reports: tallies %s to %s: %w", from, to, err)
		}
		if d.Starts, err = parseStarts(starts); err != nil {
			return nil, fmt.Errorf("reports: tally of %d on %s: %w", d.RecipientID, d.LocalDay, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reports: tallies %s to %s: %w", from, to, err)
	}
	return out, nil
}

// SaveDay stores a closed date's tallies in zone with its row in notice_days_tallied, in
// one transaction: false, and nothing written, when the date was tallied already (by
// another process, at the same moment).
func (s *Tallies) SaveDay(ctx context.Context, zone, day string, tallies []noticeDay) (bool, error) {
	err := s.k.Tx(ctx, func(tx *gorm.DB) error {
		w := kernel.OnTx(tx)
		if err := w.Insert("INSERT INTO notice_days_tallied (zone, local_day, tallied_at) VALUES (?, ?, ?)",
			[]any{zone, day, kernel.Now()}); err != nil {
			return err
		}
		return kernel.InsertRows(w, "notice_days", "zone, local_day, recipient_id, notices, starts", len(tallies),
			func(i int, args []any) []any {
				d := tallies[i]
				return append(args, zone, day, d.RecipientID, d.Notices, formatStarts(d.Starts))
			})
	})
	if kernel.IsDuplicate(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reports: tally of %s: %w", day, err)
	}
	return true, nil
}

// formatStarts writes minutes of the day as the starts column holds them: "467,1203".
func formatStarts(minutes []int) string {
	b := make([]byte, 0, 5*len(minutes))
	for i, m := range minutes {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(m), 10)
	}
	return string(b)
}

// parseStarts reads the starts column back.
func parseStarts(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	out := make([]int, 0, strings.Count(s, ",")+1)
	for f := range strings.SplitSeq(s, ",") {
		m, err := strconv.Atoi(f)
		if err != nil || m < 0 || m >= 24*60 {
			return nil, fmt.Errorf("minute %q", f)
		}
		out = append(out, m)
	}
	return out, nil
}

// Schedules lists the report schedules, oldest first.
func (s *Tallies) Schedules(ctx context.Context) ([]Schedule, error) {
	var out []Schedule
	if err := s.k.Reader(ctx).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("reports: schedules: %w", err)
	}
	return out, nil
}

// ScheduleByID reads one schedule; kernel.ErrNotFound when there is none.
func (s *Tallies) ScheduleByID(ctx context.Context, id int64) (*Schedule, error) {
	var out []Schedule
	if err := s.k.Reader(ctx).Where("id = ?", id).Limit(1).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("reports: schedule %d: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("reports: schedule %d: %w", id, kernel.ErrNotFound)
	}
	return &out[0], nil
}

// InsertSchedule stores a new schedule.
func (s *Tallies) InsertSchedule(ctx context.Context, sc *Schedule) error {
	now := kernel.Now()
	sc.ID, sc.CreatedAt, sc.UpdatedAt, sc.Version = 0, now, now, 1
	if err := s.k.Writer(ctx).Create(sc).Error; err != nil {
		sc.ID = 0
		return fmt.Errorf("reports: create schedule: %w", err)
	}
	return nil
}

// UpdateSchedule writes the schedule's report, period, send and last period over the row
// read at its version, moving the version on: kernel.ErrStateChanged when it changed or
// went since.
func (s *Tallies) UpdateSchedule(ctx context.Context, sc *Schedule) error {
	send, err := json.Marshal(sc.Send)
	if err != nil {
		return fmt.Errorf("reports: update schedule %d: %w", sc.ID, err)
	}
	now := kernel.Now()
	res := s.k.Writer(ctx).Table("report_schedules").Where("id = ? AND version = ?", sc.ID, sc.Version).
		Updates(map[string]any{"report": sc.Report, "period": sc.Period, "send": string(send), "last_period": sc.LastPeriod,
			"version": gorm.Expr("version + 1"), "updated_at": now})
	if res.Error != nil {
		return fmt.Errorf("reports: update schedule %d: %w", sc.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("reports: update schedule %d: %w", sc.ID, kernel.ErrStateChanged)
	}
	sc.Version++
	sc.UpdatedAt = now
	return nil
}

// DeleteSchedule removes the schedule as read at its version: kernel.ErrStateChanged
// when it changed or went since.
func (s *Tallies) DeleteSchedule(ctx context.Context, sc *Schedule) error {
	res := s.k.Writer(ctx).Where("id = ? AND version = ?", sc.ID, sc.Version).Delete(&Schedule{})
	if res.Error != nil {
		return fmt.Errorf("reports: delete schedule %d: %w", sc.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("reports: delete schedule %d: %w", sc.ID, kernel.ErrStateChanged)
	}
	return nil
}

// ClaimPeriod moves a schedule's last period from one to the next, a compare-and-set:
// kernel.ErrStateChanged when another process moved it first.
func (s *Tallies) ClaimPeriod(ctx context.Context, id int64, from, to string) error {
	res := s.k.Writer(ctx).Table("report_schedules").Where("id = ? AND last_period = ?", id, from).
		Updates(map[string]any{"last_period": to, "version": gorm.Expr("version + 1"), "updated_at": kernel.Now()})
	if res.Error != nil {
		return fmt.Errorf("reports: claim period %s of schedule %d: %w", to, id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("reports: claim period %s of schedule %d: %w", to, id, kernel.ErrStateChanged)
	}
	return nil
}
