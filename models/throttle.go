package models

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
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

// throttleKeyLen is the longest key the column holds.
const throttleKeyLen = 100

// takeHit counts one event under key in the window that starts at start, unless limit
// events are counted there already, and reports whether it counted. The row is created
// first, then incremented only while below the limit: a compare-and-set, so callers
// racing each other can never together pass the limit.
func (s *Store) takeHit(ctx context.Context, key string, start time.Time, limit int) (bool, error) {
	if limit <= 0 {
		return false, nil
	}
	key = truncate(key, throttleKeyLen)
	db := s.db.WithContext(ctx)
	// A plain insert whose duplicate is ignored: MySQL's upsert takes locks that
	// deadlock when several requests create the same row at once.
	err := db.Create(&ThrottleWindow{ThrottleKey: key, WindowStart: start}).Error
	if err != nil && !isDuplicate(err) {
		return false, fmt.Errorf("models: throttle %s: %w", key, err)
	}
	res := db.Model(&ThrottleWindow{}).Where("throttle_key = ? AND window_start = ? AND hits < ?", key, start, limit).
		Update("hits", gorm.Expr("hits + 1"))
	if res.Error != nil {
		return false, fmt.Errorf("models: throttle %s: %w", key, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// giveBackHit uncounts one event that takeHit counted.
func (s *Store) giveBackHit(ctx context.Context, key string, start time.Time) error {
	key = truncate(key, throttleKeyLen)
	err := s.db.WithContext(ctx).Model(&ThrottleWindow{}).Where("throttle_key = ? AND window_start = ? AND hits > 0", key, start).
		Update("hits", gorm.Expr("hits - 1")).Error
	if err != nil {
		return fmt.Errorf("models: throttle %s: give back: %w", key, err)
	}
	return nil
}

// hits reports how many events key has in the window that starts at start.
func (s *Store) hits(ctx context.Context, key string, start time.Time) (int, error) {
	var w ThrottleWindow
	err := s.db.WithContext(ctx).Where("throttle_key = ? AND window_start = ?", truncate(key, throttleKeyLen), start).Take(&w).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("models: throttle %s: %w", key, err)
	}
	return w.Hits, nil
}

// DeleteThrottleWindowsBefore prunes windows that started before a time.
func (s *Store) DeleteThrottleWindowsBefore(ctx context.Context, before time.Time) error {
	if err := s.db.WithContext(ctx).Where("window_start < ?", before.UTC()).Delete(&ThrottleWindow{}).Error; err != nil {
		return fmt.Errorf("models: prune throttle windows: %w", err)
	}
	return nil
}

// Password guessing limits: how many wrong passwords one user, and one address, may
// try in any minute without delay, at sign-in and when confirming the current password
// alike. An address over its limit is refused. A user over theirs is not: anyone could
// then keep the admin out by guessing wrong on purpose. Each further guess is answered
// after a delay that doubles with every wrong one (guessDelay), up to maxGuessDelay.
const (
	GuessesPerUser = 5
	GuessesPerIP   = 20
	guessWindow    = time.Minute
	maxGuessDelay  = 30 * time.Second
)

// guessDelay is the first delay past a user's limit; UseShortGuessDelays shortens it.
var guessDelay = time.Second

// UseShortGuessDelays makes the delays past a user's limit a thousand times shorter.
// Test binaries that guess past the limit call it first; a Herald process never does.
func UseShortGuessDelays() { guessDelay = time.Millisecond }

// ErrThrottled means that an address has had too many wrong passwords in the last
// minute or two; the password was not checked.
var ErrThrottled = errors.New("too many wrong passwords; wait a minute or two")

// passwordGuess is a password check that the throttle let through.
type passwordGuess struct {
	start time.Time
	keys  []string
	// Delay is how long the check waited because the user was over their limit.
	Delay time.Duration
}

// guessUserKey is the key a user's guesses count under: their id, so that a name
// written another way counts against the same allowance; the name tried when it is
// nobody's.
func guessUserKey(u *User, name string) string {
	if u != nil {
		return "guess user " + strconv.FormatInt(u.ID, 10)
	}
	return "guess name " + truncate(name, 64)
}

// beginGuess counts a password check against the user's (userKey, "" for none) and the
// address's limits before the check runs, so that requests in parallel cannot all pass
// a count taken beforehand. Windows are fixed minutes, and a window allows only what the
// one before it left, so a limit also holds across their border. Past the address's
// limit the guess is refused (ErrThrottled); past the user's, it waits a delay that
// grows with the wrong guesses counted, and goes on.
func (s *Store) beginGuess(ctx context.Context, userKey, ip string, now time.Time) (*passwordGuess, error) {
	start := now.UTC().Truncate(guessWindow)
	g := &passwordGuess{start: start}
	ipKey := "guess ip " + ip
	before, err := s.hits(ctx, ipKey, start.Add(-guessWindow))
	ok := false
	if err == nil {
		ok, err = s.takeHit(ctx, ipKey, start, GuessesPerIP-before)
	}
	if err != nil || !ok {
		return nil, cmp.Or(err, ErrThrottled)
	}
	g.keys = append(g.keys, ipKey)
	if userKey == "" {
		return g, nil
	}
	before, err = s.hits(ctx, userKey, start.Add(-guessWindow))
	within := false
	if err == nil {
		within, err = s.takeHit(ctx, userKey, start, GuessesPerUser-before)
	}
	n := 0
	if err == nil && !within {
		// Past the limit every guess is counted still: it makes the next wait longer.
		if _, err = s.takeHit(ctx, userKey, start, math.MaxInt32); err == nil {
			n, err = s.hits(ctx, userKey, start)
		}
	}
	if err != nil {
		s.giveBackGuess(ctx, g)
		return nil, err
	}
	g.keys = append(g.keys, userKey)
	if over := before + n - GuessesPerUser; !within && over > 0 {
		// The cap scales with guessDelay (30 s, or 30 ms with short delays); written
		// without multiplying two durations, which overflows.
		g.Delay = min(guessDelay<<min(over-1, 16), maxGuessDelay/(time.Second/guessDelay))
		t := time.NewTimer(g.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			s.giveBackGuess(ctx, g)
			return nil, ctx.Err()
		}
	}
	return g, nil
}

// endGuess keeps a wrong guess counted and gives any other back (a right password, or a
// check that could not run): only failures use up the allowance, so a busy office
// behind one address can still sign in.
func (s *Store) endGuess(ctx context.Context, g *passwordGuess, notWrong bool) {
	if notWrong {
		s.giveBackGuess(ctx, g)
	}
}

// giveBackGuess uncounts a guess wherever beginGuess counted it.
func (s *Store) giveBackGuess(ctx context.Context, g *passwordGuess) {
	// The count must go down even if the request is gone; a failure here only leaves
	// the throttle stricter until the window ends.
	ctx = context.WithoutCancel(ctx)
	for _, key := range g.keys {
		_ = s.giveBackHit(ctx, key, g.start)
	}
}

// AuditOnce appends an audit entry unless an entry with the same key was appended in the
// current window of length per; it reports whether it wrote. It records events that
// anyone can repeat at will, such as a wrong API key, without letting them flood the log.
func (s *Store) AuditOnce(ctx context.Context, e AuditEntry, key string, per time.Duration) (bool, error) {
	key, start := "audit "+key, Now().Truncate(per)
	ok, err := s.takeHit(ctx, key, start, 1)
	if err != nil || !ok {
		return false, err
	}
	if err := s.Audit(ctx, e); err != nil {
		// Let the next event of the window try again.
		_ = s.giveBackHit(context.WithoutCancel(ctx), key, start)
		return false, err
	}
	return true, nil
}
