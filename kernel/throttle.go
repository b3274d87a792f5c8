package kernel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// ThrottleWindow counts the events of one kind (its key) in one fixed window of time.
// It lives in the database because every web process must share one count: MySQL is the
// source of truth, and a conditional increment is atomic there and in SQLite alike.
type ThrottleWindow struct {
	ThrottleKey string    `gorm:"primaryKey"`
	WindowStart time.Time `gorm:"primaryKey"`
	Hits        int
}

// TableName implements gorm's tabler.
func (ThrottleWindow) TableName() string { return "throttle_windows" }

// ThrottleKeyLen is the longest key the column holds.
const ThrottleKeyLen = 100

// TakeHit counts one event under key in the window that starts at start, unless limit
// events are counted there already, and reports whether it counted. The row is created
// first, then incremented only while below the limit: a compare-and-set, so callers
// racing each other can never together pass the limit.
func (s *DB) TakeHit(ctx context.Context, key string, start time.Time, limit int) (bool, error) {
	if limit <= 0 {
		return false, nil
	}
	key = Truncate(key, ThrottleKeyLen)
	db := s.Writer(ctx)
	// A plain insert whose duplicate is ignored: MySQL's upsert takes locks that
	// deadlock when several requests create the same row at once.
	err := db.Create(&ThrottleWindow{ThrottleKey: key, WindowStart: start}).Error
	if err != nil && !IsDuplicate(err) {
		return false, fmt.Errorf("kernel: throttle %s: %w", key, err)
	}
	res := db.Model(&ThrottleWindow{}).Where("throttle_key = ? AND window_start = ? AND hits < ?", key, start, limit).
		Update("hits", gorm.Expr("hits + 1"))
	if res.Error != nil {
		return false, fmt.Errorf("kernel: throttle %s: %w", key, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// GiveBackHit uncounts one event that TakeHit counted.
func (s *DB) GiveBackHit(ctx context.Context, key string, start time.Time) error {
	key = Truncate(key, ThrottleKeyLen)
	err := s.Writer(ctx).Model(&ThrottleWindow{}).Where("throttle_key = ? AND window_start = ? AND hits > 0", key, start).
		Update("hits", gorm.Expr("hits - 1")).Error
	if err != nil {
		return fmt.Errorf("kernel: throttle %s: give back: %w", key, err)
	}
	return nil
}

// Hits reports how many events key has in the window that starts at start.
func (s *DB) Hits(ctx context.Context, key string, start time.Time) (int, error) {
	var w ThrottleWindow
	err := s.Writer(ctx).Where("throttle_key = ? AND window_start = ?", Truncate(key, ThrottleKeyLen), start).Take(&w).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("kernel: throttle %s: %w", key, err)
	}
	return w.Hits, nil
}

// DeleteThrottleWindowsBefore prunes windows that started before a time.
func (s *DB) DeleteThrottleWindowsBefore(ctx context.Context, before time.Time) error {
	if err := s.Writer(ctx).Where("window_start < ?", before.UTC()).Delete(&ThrottleWindow{}).Error; err != nil {
		return fmt.Errorf("kernel: prune throttle windows: %w", err)
	}
	return nil
}

// ClaimOnce reports whether key is claimed for the first time for the moment at: a
// compare-and-set in the database, so that of any number of processes claiming one key
// at once exactly one succeeds. It keeps a signed request from being used twice (a
// WeCom callback's signature, claimed for its timestamp); claims are pruned with the
// throttle's windows after a day, far longer than any signature is accepted.
func (s *DB) ClaimOnce(ctx context.Context, key string, at time.Time) (bool, error) {
	return s.TakeHit(ctx, "once "+key, at.UTC().Truncate(time.Second), 1)
}

// ReleaseClaim gives back a claim of ClaimOnce whose work could not be done, so that a
// retry of it is accepted.
func (s *DB) ReleaseClaim(ctx context.Context, key string, at time.Time) error {
	return s.GiveBackHit(ctx, "once "+key, at.UTC().Truncate(time.Second))
}
