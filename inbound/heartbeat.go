package inbound

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"herald/alert"
	"herald/audit"
	"herald/duty"
	"herald/i18n"
	"herald/kernel"
	"herald/models"
)

// Heartbeat is a job or a tool that must ping Herald within its interval, plus grace: an
// end-of-day batch, Alertmanager's Watchdog. A missed ping opens an alert through its
// route; the next ping resolves it.
type Heartbeat struct {
	ID              int64
	Name            string
	TokenHash       string
	IntervalSeconds int
	GraceSeconds    int
	// Days is "" (pings expected every day) or DaysWorkdays.
	Days  string
	Route Route `gorm:"serializer:json"`
	// LastPingAt is the last ping; DueAt when the next is expected by (grace aside).
	LastPingAt *time.Time
	DueAt      time.Time
	// MissedAt is when a check found the ping missed and opened AlertID.
	MissedAt  *time.Time
	AlertID   *int64
	CreatedBy string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TableName implements gorm's tabler.
func (Heartbeat) TableName() string { return "heartbeats" }

// Interval and Grace are the heartbeat's as durations.
func (h *Heartbeat) Interval() time.Duration { return time.Duration(h.IntervalSeconds) * time.Second }

// Grace is how long past its due time a ping may still come before it counts as missed.
func (h *Heartbeat) Grace() time.Duration { return time.Duration(h.GraceSeconds) * time.Second }

// DaysWorkdays expects pings on Herald's working days only: weekdays that are no
// holiday, and make-up workdays.
const DaysWorkdays = "workdays"

// Bounds of a heartbeat.
const (
	MinHeartbeatInterval = time.Minute
	MaxHeartbeatInterval = 7 * 24 * time.Hour
	MaxHeartbeatGrace    = 24 * time.Hour
)

// HeartbeatInput is a heartbeat as the API gives it.
type HeartbeatInput struct {
	Name     string
	Interval string
	Grace    string
	Days     string
	Route    Route
}

// heartbeatStore is the heartbeats' queries on k.
type heartbeatStore struct{ k *kernel.DB }

func (s heartbeatStore) byName(ctx context.Context, name string) (*Heartbeat, error) {
	var h Heartbeat
	err := s.k.Reader(ctx).Where("name = ?", name).Take(&h).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, kernel.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("inbound: heartbeat %q: %w", name, err)
	}
	return &h, nil
}

// checkHeartbeat validates an input into the heartbeat it saves; errors name their
// field.
func (d *Gateway) checkHeartbeat(ctx context.Context, in HeartbeatInput) (*Heartbeat, error) {
	h := &Heartbeat{Name: strings.TrimSpace(in.Name), Days: strings.TrimSpace(in.Days), Route: in.Route}
	if err := checkName(h.Name); err != nil {
		return nil, err
	}
	interval, err := time.ParseDuration(strings.TrimSpace(in.Interval))
	if err != nil || interval < MinHeartbeatInterval || interval > MaxHeartbeatInterval {
		return nil, kernel.Invalid("interval", "integrations.invalid.interval")
	}
	var grace time.Duration
	if g := strings.TrimSpace(in.Grace); g != "" {
		if grace, err = time.ParseDuration(g); err != nil || grace < 0 || grace > MaxHeartbeatGrace {
			return nil, kernel.Invalid("grace", "integrations.invalid.grace")
		}
	}
	h.IntervalSeconds, h.GraceSeconds = int(interval/time.Second), int(grace/time.Second)
	if h.Days != "" && h.Days != DaysWorkdays {
		return nil, kernel.Invalid("days", "integrations.invalid.days")
	}
	if len(h.Route.Matchers) > 0 {
		return nil, kernel.Invalid("route.matchers", "integrations.invalid.default_matchers")
	}
	if err := d.checkRoute(ctx, "route", &h.Route); err != nil {
		return nil, err
	}
	return h, nil
}

// CreateHeartbeat saves a heartbeat and returns it with its token, shown this once; its
// first ping is expected within its interval from now. Audited as heartbeat.create.
func (d *Gateway) CreateHeartbeat(ctx context.Context, by audit.Actor, in HeartbeatInput) (*Heartbeat, string, error) {
	h, err := d.checkHeartbeat(ctx, in)
	if err != nil {
		return nil, "", err
	}
	token := kernel.NewToken()
	now := d.now()
	h.TokenHash, h.CreatedBy, h.CreatedAt, h.UpdatedAt = kernel.HashToken(token), by.Name, now, now
	if h.DueAt, err = d.nextDue(ctx, h, now); err != nil {
		return nil, "", err
	}
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		err := tx.DB().Writer(ctx).Create(h).Error
		if kernel.IsDuplicate(err) {
			return kernel.DuplicateField("name", "integrations.invalid.name_taken")
		}
		if err != nil {
			return fmt.Errorf("inbound: create heartbeat %q: %w", h.Name, err)
		}
		ch.Audit("heartbeat.create", "heartbeat", h.Name, heartbeatParams(h))
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return h, token, nil
}

func heartbeatParams(h *Heartbeat) audit.Params {
	return audit.Params{"name": h.Name, "interval": h.Interval().String(), "grace": h.Grace().String(), "days": h.Days,
		"policy": h.Route.Policy}
}

// UpdateHeartbeat changes the interval, grace, days and route of the heartbeat called
// name; its name and token stay (in.Name is not read). When the interval or the days
// change and no alert of a missed ping is open, the next ping is expected an interval
// after the last (or from now, if none came yet). Audited as heartbeat.update.
// kernel.ErrNotFound: no such heartbeat.
func (d *Gateway) UpdateHeartbeat(ctx context.Context, by audit.Actor, name string, in HeartbeatInput) (*Heartbeat, error) {
	old, err := d.Heartbeat(ctx, name)
	if err != nil {
		return nil, err
	}
	in.Name = old.Name
	h, err := d.checkHeartbeat(ctx, in)
	if err != nil {
		return nil, err
	}
	now := d.now()
	h.ID, h.TokenHash, h.CreatedBy, h.CreatedAt, h.UpdatedAt = old.ID, old.TokenHash, old.CreatedBy, old.CreatedAt, now
	h.LastPingAt, h.DueAt, h.MissedAt, h.AlertID = old.LastPingAt, old.DueAt, old.MissedAt, old.AlertID
	recompute := (h.IntervalSeconds != old.IntervalSeconds || h.Days != old.Days) && old.MissedAt == nil && old.AlertID == nil
	if recompute {
		from := now
		if old.LastPingAt != nil {
			from = *old.LastPingAt
		}
		if h.DueAt, err = d.nextDue(ctx, h, from); err != nil {
			return nil, err
		}
	}
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if _, err := (heartbeatStore{tx.DB()}).byName(ctx, h.Name); err != nil {
			return err // deleted meanwhile
		}
		w := tx.DB().Writer(ctx)
		err := w.Model(&Heartbeat{}).Where("id = ?", h.ID).
			Select("interval_seconds", "grace_seconds", "days", "route", "updated_at").Updates(h).Error
		if err != nil {
			return fmt.Errorf("inbound: update heartbeat %q: %w", h.Name, err)
		}
		if recompute {
			// Compare-and-set: a check that found the ping missed meanwhile keeps its due
			// time, and so does a ping that came meanwhile.
			res := w.Model(&Heartbeat{}).Where("id = ? AND missed_at IS NULL AND due_at = ?", h.ID, old.DueAt).Update("due_at", h.DueAt)
			if res.Error != nil {
				return fmt.Errorf("inbound: update heartbeat %q: %w", h.Name, res.Error)
			}
			if res.RowsAffected == 0 {
				h.DueAt = old.DueAt
			}
		}
		ch.Audit("heartbeat.update", "heartbeat", h.Name, heartbeatParams(h))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// RotateHeartbeatToken gives the heartbeat called name a new token, returned this once;
// the old one stops working at once. Audited as heartbeat.token. kernel.ErrNotFound: no
// such heartbeat.
func (d *Gateway) RotateHeartbeatToken(ctx context.Context, by audit.Actor, name string) (string, error) {
	token := kernel.NewToken()
	err := d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		h, err := heartbeatStore{tx.DB()}.byName(ctx, name)
		if err != nil {
			return err
		}
		res := tx.DB().Writer(ctx).Model(&Heartbeat{}).Where("id = ?", h.ID).
			Updates(map[string]any{"token_hash": kernel.HashToken(token), "updated_at": d.now()})
		if res.Error != nil {
			return fmt.Errorf("inbound: token of heartbeat %q: %w", name, res.Error)
		}
		ch.Audit("heartbeat.token", "heartbeat", h.Name, audit.Params{"name": h.Name})
		return nil
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// DeleteHeartbeat removes the heartbeat called name; an alert it opened stays.
// Audited as heartbeat.delete. kernel.ErrNotFound: no such heartbeat.
func (d *Gateway) DeleteHeartbeat(ctx context.Context, by audit.Actor, name string) error {
	return d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		h, err := heartbeatStore{tx.DB()}.byName(ctx, name)
		if err != nil {
			return err
		}
		if err := tx.DB().Writer(ctx).Delete(&Heartbeat{}, h.ID).Error; err != nil {
			return fmt.Errorf("inbound: delete heartbeat %q: %w", name, err)
		}
		ch.Audit("heartbeat.delete", "heartbeat", h.Name, heartbeatParams(h))
		return nil
	})
}

// Heartbeats lists the heartbeats by name.
func (d *Gateway) Heartbeats(ctx context.Context) ([]Heartbeat, error) {
	var out []Heartbeat
	if err := d.store.DB().Reader(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("inbound: heartbeats: %w", err)
	}
	return out, nil
}

// Heartbeat reads the heartbeat called name; kernel.ErrNotFound when there is none.
func (d *Gateway) Heartbeat(ctx context.Context, name string) (*Heartbeat, error) {
	return heartbeatStore{d.store.DB()}.byName(ctx, name)
}

// Ping records a ping of the heartbeat called name, if token is its token (ErrToken
// otherwise): its next ping is expected an interval from now, and an alert a missed
// ping opened is resolved, by the heartbeat, via source.
func (d *Gateway) Ping(ctx context.Context, name, token string) (*Heartbeat, error) {
	st := heartbeatStore{d.store.DB()}
	h, err := st.byName(ctx, name)
	if errors.Is(err, kernel.ErrNotFound) {
		return nil, ErrToken
	}
	if err != nil {
		return nil, err
	}
	if token == "" || subtle.ConstantTimeCompare([]byte(kernel.HashToken(token)), []byte(h.TokenHash)) != 1 {
		return nil, ErrToken
	}
	now := d.now()
	due, err := d.nextDue(ctx, h, now)
	if err != nil {
		return nil, err
	}
	w := d.store.DB().Writer(ctx)
	res := w.Model(&Heartbeat{}).Where("id = ?", h.ID).
		Updates(map[string]any{"last_ping_at": now, "due_at": due, "missed_at": nil, "updated_at": now})
	if res.Error != nil {
		return nil, fmt.Errorf("inbound: ping heartbeat %q: %w", name, res.Error)
	}
	// The alert a missed ping opened, taken by compare-and-set: a check that opened one
	// while this ping came resolves it itself (CheckHeartbeats).
	var open Heartbeat
	if err := w.Select("alert_id").Where("id = ?", h.ID).Take(&open).Error; err != nil {
		return nil, fmt.Errorf("inbound: ping heartbeat %q: %w", name, err)
	}
	if open.AlertID != nil {
		res := w.Model(&Heartbeat{}).Where("id = ? AND alert_id = ?", h.ID, *open.AlertID).Update("alert_id", nil)
		if res.Error != nil {
			return nil, fmt.Errorf("inbound: ping heartbeat %q: %w", name, res.Error)
		}
		if res.RowsAffected == 1 {
			if err := d.resolveMissed(ctx, h, *open.AlertID); err != nil {
				return nil, err
			}
		}
	}
	h.LastPingAt, h.DueAt, h.MissedAt, h.AlertID = &now, due, nil, nil
	return h, nil
}

// resolveMissed resolves the alert of a missed ping, by the heartbeat, via source: its
// job checked in after all.
func (d *Gateway) resolveMissed(ctx context.Context, h *Heartbeat, alertID int64) error {
	if d.alerts == nil {
		return nil
	}
	_, err := d.alerts.ResolveFromSource(ctx, audit.System("heartbeat:"+h.Name), alertID, "heartbeat:"+h.Name, true)
	if err != nil && !errors.Is(err, alert.ErrAlertEnded) {
		return err
	}
	return nil
}

// nextDue is when the heartbeat's next ping is expected after one at at: an interval
// later, and for a heartbeat of working days, moved on by whole intervals past the days
// that are not (a nightly job that pings on workdays is not missed on a holiday).
func (d *Gateway) nextDue(ctx context.Context, h *Heartbeat, at time.Time) (time.Time, error) {
	due := at.Add(h.Interval())
	if h.Days != DaysWorkdays {
		return due, nil
	}
	for range 60 {
		work, err := d.workday(ctx, due)
		if err != nil || work {
			return due, err
		}
		due = due.Add(h.Interval())
	}
	return due, nil
}

// workday reports whether t falls on one of Herald's working days in its time zone:
// a weekday that is no holiday, or a make-up workday.
func (d *Gateway) workday(ctx context.Context, t time.Time) (bool, error) {
	date, _ := duty.DateOf(t, kernel.Zone(d.loc))
	day, err := d.store.Duty().DutyDayOf(ctx, date)
	if err != nil {
		return false, err
	}
	return day.Kind == duty.DayWorkday || day.Kind == duty.DayMakeupWorkday, nil
}

// CheckHeartbeats opens an alert for each heartbeat whose ping is missed at now (past its
// due time and grace), once: the check that sets missed_at by compare-and-set opens it.
// It returns how many it opened.
func (d *Gateway) CheckHeartbeats(ctx context.Context, now time.Time) (int, error) {
	// To the microsecond the database keeps: missed_at is compared with it again below.
	now = now.UTC().Truncate(time.Microsecond)
	var due []Heartbeat
	err := d.store.DB().Reader(ctx).Where("missed_at IS NULL AND due_at < ?", now).Order("due_at").Limit(100).Find(&due).Error
	if err != nil {
		return 0, fmt.Errorf("inbound: due heartbeats: %w", err)
	}
	opened := 0
	for i := range due {
		h := &due[i]
		if now.Before(h.DueAt.Add(h.Grace())) {
			continue
		}
		if h.Days == DaysWorkdays {
			if work, err := d.workday(ctx, h.DueAt); err != nil {
				return opened, err
			} else if !work {
				// Expected on a day that turned out not to be a working day (a holiday
				// entered since): expected again on the next.
				next, err := d.nextDue(ctx, h, h.DueAt)
				if err != nil {
					return opened, err
				}
				if err := d.store.DB().Writer(ctx).Model(&Heartbeat{}).Where("id = ? AND due_at = ?", h.ID, h.DueAt).
					Update("due_at", next).Error; err != nil {
					return opened, fmt.Errorf("inbound: heartbeat %q: %w", h.Name, err)
				}
				continue
			}
		}
		res := d.store.DB().Writer(ctx).Model(&Heartbeat{}).Where("id = ? AND missed_at IS NULL AND due_at = ?", h.ID, h.DueAt).
			Update("missed_at", now)
		if res.Error != nil {
			return opened, fmt.Errorf("inbound: heartbeat %q: %w", h.Name, res.Error)
		}
		if res.RowsAffected == 0 {
			continue // pinged, or taken by another check, meanwhile
		}
		alertID, err := d.openMissed(ctx, h, now)
		if err != nil {
			d.store.DB().Writer(ctx).Model(&Heartbeat{}).Where("id = ?", h.ID).Update("missed_at", nil)
			return opened, err
		}
		res = d.store.DB().Writer(ctx).Model(&Heartbeat{}).Where("id = ? AND missed_at = ?", h.ID, now).Update("alert_id", alertID)
		if res.Error != nil {
			return opened, fmt.Errorf("inbound: heartbeat %q: %w", h.Name, res.Error)
		}
		opened++
		if res.RowsAffected == 0 {
			// A ping came while the alert opened: it is over already.
			if err := d.resolveMissed(ctx, h, alertID); err != nil {
				return opened, err
			}
		}
	}
	return opened, nil
}

// openMissed opens the alert of a missed ping through the heartbeat's route.
func (d *Gateway) openMissed(ctx context.Context, h *Heartbeat, now time.Time) (int64, error) {
	title := i18n.In(i18n.Chinese, "integrations.notice.heartbeat_missed", "Name", h.Name)
	last := i18n.In(i18n.Chinese, "integrations.notice.heartbeat_never")
	if h.LastPingAt != nil {
		last = h.LastPingAt.In(kernel.Zone(d.loc)).Format("2006-01-02 15:04:05")
	}
	ev := Event{DedupKey: "heartbeat:" + h.Name, Status: StatusFiring, Severity: SeverityCritical, Title: title,
		Description: i18n.In(i18n.Chinese, "integrations.notice.heartbeat_last", "Last", last), Labels: map[string]string{"heartbeat": h.Name}}
	it := &Integration{Name: "heartbeat:" + h.Name}
	id, err := d.opener.OpenAlert(ctx, opening(it, &h.Route, ev))
	if err != nil {
		return 0, err
	}
	return id, alert.Of(d.store).MarkSource(ctx, id, it.Name, ev.DedupKey, ev.Labels, ev.Severity, now)
}

// RunHeartbeatPoll checks the heartbeats every interval until ctx ends.
func (d *Gateway) RunHeartbeatPoll(ctx context.Context, every time.Duration) {
	kernel.Every(ctx, every, func() {
		if _, err := d.CheckHeartbeats(ctx, d.now()); err != nil && ctx.Err() == nil {
			d.log.Warn("inbound: heartbeat check", "error", err)
		}
	})
}
