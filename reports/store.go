package reports

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"herald/kernel"
	"herald/migrations"
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
// alone; ownKey, when not 0, keeps the alerts of that API key's batches (the rule
// models.OwnBatches).
func (s *Tallies) AlertTimes(ctx context.Context, from, to time.Time, ownKey int64) ([]alertTimes, error) {
	q := s.k.Reader(ctx).Table("alerts").
		Select("id, policy, source, state, step, round, opened_at, acknowledged_at, resolved_at").
		Where("opened_at >= ? AND opened_at < ?", from, to)
	q = ownAlerts(q, ownKey)
	var out []alertTimes
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("reports: alerts opened %s to %s: %w", from, to, err)
	}
	return out, nil
}

func ownAlerts(q *gorm.DB, ownKey int64) *gorm.DB {
	if ownKey == 0 {
		return q
	}
	return q.Where("batch_id IN ("+models.OwnBatches+")", sql.Named("key", ownKey))
}

// alertPerson is one person an alert's notices went to.
type alertPerson struct {
	AlertID     int64
	RecipientID int64
}

// AlertPeople reads whom the notices of the alerts opened in [from, to) went to, one
// row per alert and person, through idx_messages_alert_recipient; posts to chat groups
// name no person and are left out.
func (s *Tallies) AlertPeople(ctx context.Context, from, to time.Time, ownKey int64) ([]alertPerson, error) {
	q := s.k.Reader(ctx).Table("alerts a").Select("DISTINCT m.alert_id, m.recipient_id").
		Joins("JOIN messages m ON m.alert_id = a.id").
		Where("a.opened_at >= ? AND a.opened_at < ? AND m.recipient_id > 0", from, to)
	if ownKey != 0 {
		q = q.Where("a.batch_id IN ("+models.OwnBatches+")", sql.Named("key", ownKey))
	}
	var out []alertPerson
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("reports: people of alerts opened %s to %s: %w", from, to, err)
	}
	return out, nil
}

// Interruption buckets: where in the day an interruption began, by the clock alone
// (whether the day is a working day is the holiday calendar's, applied by the service).
const (
	bucketWorkHours = 1 // 08:00–19:00
	bucketSleep     = 2 // within the sleep span
)

// dayTally is what the interruptions report adds up in SQL: for one person, one local
// date and one bucket, the notices delivered and the interruptions that began there.
type dayTally struct {
	RecipientID   int64
	LocalDay      string
	Bucket        int
	Notices       int
	Interruptions int
}

// zoneSpan is a stretch of time in which the time zone's offset from UTC stays the same.
type zoneSpan struct {
	until  time.Time // exclusive; zero on the last
	offset int       // seconds east of UTC
}

// zoneSpans splits [from, to) where loc's offset changes (summer time), looking hour by
// hour: a zone without summer time, like Asia/Shanghai, gives one span.
func zoneSpans(from, to time.Time, loc *time.Location) []zoneSpan {
	_, off := from.In(loc).Zone()
	var out []zoneSpan
	for t := from.Add(time.Hour); t.Before(to); t = t.Add(time.Hour) {
		if _, o := t.In(loc).Zone(); o != off {
			// The change happened within the hour before t: find its minute.
			at := t.Add(-time.Hour)
			for _, o2 := at.In(loc).Zone(); o2 == off; _, o2 = at.In(loc).Zone() {
				at = at.Add(time.Minute)
			}
			out = append(out, zoneSpan{until: at, offset: off})
			off = o
		}
	}
	return append(out, zoneSpan{offset: off})
}

// DayTallies counts, for each person, local date and bucket, the notices delivered to
// them (status sent) in [from, to) and the interruptions among them: a notice sent
// within a minute of the one before to the same person joins its interruption, any
// other begins one. The window function and the sums run in the database over
// idx_messages_sent_report; what comes back is a few rows per person and day. sleepFrom
// and sleepTo are minutes of the day (sleepFrom > sleepTo wraps midnight).
func (s *Tallies) DayTallies(ctx context.Context, from, to time.Time, loc *time.Location, sleepFrom, sleepTo int, ownKey int64) ([]dayTally, error) {
	mysql := s.k.Dialect() == migrations.MySQL
	// The offset of each notice's time from UTC, by the span it falls in.
	offset, offsetArgs := "0", []any(nil)
	if spans := zoneSpans(from, to, loc); len(spans) == 1 {
		offset = strconv.Itoa(spans[0].offset)
	} else {
		var b strings.Builder
		b.WriteString("CASE")
		for _, z := range spans[:len(spans)-1] {
			fmt.Fprintf(&b, " WHEN sent_at < ? THEN %d", z.offset)
			offsetArgs = append(offsetArgs, z.until)
		}
		fmt.Fprintf(&b, " ELSE %d END", spans[len(spans)-1].offset)
		offset = b.String()
	}
	// The notice's local date and minute of the day are worked out once, beside the
	// window function, in the one derived table the database materialises.
	var day, minute, gap string
	if mysql {
		local := "DATE_ADD(sent_at, INTERVAL (" + offset + ") SECOND)"
		day, minute = "DATE_FORMAT("+local+", '%Y-%m-%d')", "TIME_TO_SEC("+local+") DIV 60"
		gap = "TIMESTAMPDIFF(MICROSECOND, prev, ts) >= 60000000"
	} else {
		local := "datetime(sent_at, (" + offset + ") || ' seconds')"
		day, minute = "substr("+local+", 1, 10)", "CAST(strftime('%H', "+local+") AS INTEGER) * 60 + CAST(strftime('%M', "+local+") AS INTEGER)"
		gap = "ROUND((julianday(ts) - julianday(prev)) * 86400000) >= 60000"
	}
	args := slices.Concat(offsetArgs, offsetArgs)
	if !mysql {
		args = slices.Concat(args, offsetArgs) // the minute reads the local time twice
	}
	sleep := fmt.Sprintf("(m >= %d AND m < %d)", sleepFrom, sleepTo)
	if sleepFrom > sleepTo {
		sleep = fmt.Sprintf("(m >= %d OR m < %d)", sleepFrom, sleepTo)
	}
	bucket := fmt.Sprintf("(CASE WHEN m >= %d AND m < %d THEN %d ELSE 0 END + CASE WHEN %s THEN %d ELSE 0 END)",
		workFrom, workTo, bucketWorkHours, sleep, bucketSleep)
	own := ""
	args = append(args, models.StatusSent, from, to)
	if ownKey != 0 {
		own = " AND (batch_id IN (" + strings.ReplaceAll(models.OwnBatches, "@key", "?") + ") OR alert_id IN (" +
			strings.ReplaceAll(models.OwnAlerts, "@key", "?") + "))"
		args = append(args, ownKey, ownKey)
	}
	query := "SELECT r AS recipient_id, local_day, " + bucket + " AS bucket, COUNT(*) AS notices, " +
		"SUM(CASE WHEN prev IS NULL OR " + gap + " THEN 1 ELSE 0 END) AS interruptions FROM (" +
		"SELECT recipient_id AS r, sent_at AS ts, LAG(sent_at) OVER (PARTITION BY recipient_id ORDER BY sent_at) AS prev, " +
		day + " AS local_day, " + minute + " AS m " +
		"FROM messages WHERE status = ? AND sent_at >= ? AND sent_at < ? AND recipient_id > 0" + own +
		") w GROUP BY r, local_day, bucket"
	var out []dayTally
	if err := s.k.Reader(ctx).Raw(query, args...).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("reports: notices sent %s to %s: %w", from, to, err)
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
