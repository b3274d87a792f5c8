package access

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"herald/kernel"
)

// Password guessing limits: how many wrong passwords one user, and one address, may
// try in any minute, at sign-in and when confirming the current password alike. An
// address over its limit is refused. A user over theirs is not locked out (anyone could
// then keep the admin out by guessing wrong on purpose): past the limit the user's
// guesses pass one at a time through a gate that closes for a delay after each, 1 s
// doubling with every wrong guess up to maxGuessDelay. A guess while the gate is closed
// is refused at once (ErrThrottled, with the time until it opens), whatever the number
// of requests or addresses: of any number of parallel guesses at most GuessesPerUser+1
// reach the check, and in an hour fewer than 80 (ASVS 2.2.1 asks under 100). The gate
// remembers its delay for guessMemory after it last opened; a right password resets it.
const (
	GuessesPerUser = 5
	GuessesPerIP   = 20
	guessWindow    = time.Minute
	maxGuessDelay  = time.Minute
	guessMemory    = time.Hour
)

// guessDelay is the first delay past a user's limit.
const guessDelay = time.Second

// ErrThrottled means that the password was not checked: an address has had too many
// wrong passwords in the last minute or two, or the user's gate is closed. The error
// is a *ThrottledError saying when to try again.
var ErrThrottled = kernel.Declare(kernel.DomainError{Kind: kernel.KindTooMany, Code: "throttled", Key: "login.throttled", Text: "too many wrong passwords; try again later"})

// ErrUserThrottled is ErrThrottled by the user's gate, whose message says how many
// Seconds to wait.
var ErrUserThrottled = kernel.Declare(kernel.DomainError{Kind: kernel.KindTooMany, Code: "throttled", Key: "login.user_throttled", Err: ErrThrottled,
	Text: "too many wrong passwords for this user; try again later"})

// ThrottledError is a refused guess and how long until one may be tried again; it is
// ErrThrottled (ErrUserThrottled when the user's gate refused it).
type ThrottledError struct {
	RetryAfter time.Duration
	// User says the user's gate refused it, not the address's limit.
	User bool
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("%s (in %s)", ErrThrottled, e.RetryAfter.Round(time.Second))
}

// Unwrap makes a *ThrottledError ErrThrottled, or ErrUserThrottled with the seconds to
// wait, for errors.Is and the presenter.
func (e *ThrottledError) Unwrap() error {
	if e.User {
		return ErrUserThrottled.With("Seconds", RetryAfterSeconds(e))
	}
	return ErrThrottled
}

// RetryAfterSeconds is how many whole seconds to wait after a refused guess (at least
// 1), for a Retry-After header; 0 when err is no refusal.
func RetryAfterSeconds(err error) int {
	te, ok := errors.AsType[*ThrottledError](err)
	if !ok {
		return 0
	}
	return max(1, int(math.Ceil(te.RetryAfter.Seconds())))
}

// passwordGuess is a password check that the throttle let through.
type passwordGuess struct {
	start time.Time
	keys  []string
	// gate is the user's gate the guess passed, when it was past the user's limit.
	gate *kernel.ThrottleWindow
}

// guessUserKey is the key a user's guesses count under: their id, so that a name
// written another way counts against the same allowance; the name tried when it is
// nobody's.
func guessUserKey(u *User, name string) string {
	if u != nil {
		return "guess user " + strconv.FormatInt(u.ID, 10)
	}
	return "guess name " + kernel.Truncate(name, 64)
}

// beginGuess counts a password check against the user's (userKey, "" for none) and the
// address's limits before the check runs, so that requests in parallel cannot all pass
// a count taken beforehand. Windows are fixed minutes, and a window allows only what the
// one before it left, so a limit also holds across their border. Past the address's
// limit the guess is refused; past the user's, it must pass the user's gate
// (passGate). A refusal is a *ThrottledError.
func (s *Credentials) beginGuess(ctx context.Context, userKey, ip string, now time.Time) (*passwordGuess, error) {
	now = now.UTC()
	start := now.Truncate(guessWindow)
	g := &passwordGuess{start: start}
	ipKey := "guess ip " + ip
	before, err := s.k.Hits(ctx, ipKey, start.Add(-guessWindow))
	ok := false
	if err == nil {
		ok, err = s.k.TakeHit(ctx, ipKey, start, GuessesPerIP-before)
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &ThrottledError{RetryAfter: start.Add(guessWindow).Sub(now)}
	}
	g.keys = append(g.keys, ipKey)
	if userKey == "" {
		return g, nil
	}
	gate, err := s.guessGate(ctx, userKey)
	if err == nil && !gateActive(gate, now) {
		within := false
		before, err = s.k.Hits(ctx, userKey, start.Add(-guessWindow))
		if err == nil {
			within, err = s.k.TakeHit(ctx, userKey, start, GuessesPerUser-before)
		}
		if err == nil && within {
			g.keys = append(g.keys, userKey)
			return g, nil
		}
	}
	if err == nil {
		g.gate, err = s.passGate(ctx, userKey, gate, now)
	}
	if err != nil {
		// A refused guess was not checked: it leaves the address's allowance as it was.
		s.giveBackGuess(ctx, g)
		return nil, err
	}
	return g, nil
}

// gateKey is the row of a user's gate in throttle_windows: its window_start is when the
// gate opens, its hits the wrong guesses past the limit in a row.
func gateKey(userKey string) string { return "gate " + userKey }

// guessGate reads a user's gate; nil when it has none.
func (s *Credentials) guessGate(ctx context.Context, userKey string) (*kernel.ThrottleWindow, error) {
	var list []kernel.ThrottleWindow
	err := s.k.Writer(ctx).Where("throttle_key = ?", kernel.Truncate(gateKey(userKey), kernel.ThrottleKeyLen)).Limit(1).Find(&list).Error
	if err != nil {
		return nil, fmt.Errorf("access: guess gate %s: %w", userKey, err)
	}
	if len(list) == 0 {
		return nil, nil
	}
	list[0].WindowStart = list[0].WindowStart.UTC()
	return &list[0], nil
}

// gateActive reports whether a gate still holds a user's guesses at now: it has
// counted wrong guesses, and opened less than guessMemory ago (or is still closed).
func gateActive(gate *kernel.ThrottleWindow, now time.Time) bool {
	return gate != nil && gate.Hits > 0 && now.Sub(gate.WindowStart) < guessMemory
}

// passGate lets one guess through a user's gate and closes it behind the guess for the
// next delay, as a compare-and-set on the gate as read: of guesses racing for an open
// gate exactly one passes. The others, and any guess while the gate is closed, are
// refused with the time until it opens.
func (s *Credentials) passGate(ctx context.Context, userKey string, gate *kernel.ThrottleWindow, now time.Time) (*kernel.ThrottleWindow, error) {
	if gate != nil && gate.WindowStart.After(now) {
		return nil, &ThrottledError{RetryAfter: gate.WindowStart.Sub(now), User: true}
	}
	streak := 0
	if gateActive(gate, now) {
		streak = gate.Hits
	}
	delay := min(guessDelay<<min(streak, 16), maxGuessDelay)
	// Whole seconds: MySQL's DATETIME keeps no more.
	next := &kernel.ThrottleWindow{ThrottleKey: kernel.Truncate(gateKey(userKey), kernel.ThrottleKeyLen), WindowStart: now.Add(delay + time.Second - 1).Truncate(time.Second), Hits: streak + 1}
	db := s.k.Writer(ctx)
	var passed bool
	if gate == nil {
		err := db.Create(next).Error
		if err != nil && !kernel.IsDuplicate(err) {
			return nil, fmt.Errorf("access: guess gate %s: %w", userKey, err)
		}
		passed = err == nil
	} else {
		res := db.Model(&kernel.ThrottleWindow{}).
			Where("throttle_key = ? AND window_start = ? AND hits = ?", next.ThrottleKey, gate.WindowStart, gate.Hits).
			Updates(map[string]any{"window_start": next.WindowStart, "hits": next.Hits})
		if res.Error != nil {
			return nil, fmt.Errorf("access: guess gate %s: %w", userKey, res.Error)
		}
		passed = res.RowsAffected == 1
	}
	if passed {
		return next, nil
	}
	// Another guess passed first: this one waits for the gate it closed.
	now2, err := s.guessGate(ctx, userKey)
	if err != nil {
		return nil, err
	}
	wait := time.Second
	if now2 != nil && now2.WindowStart.After(now) {
		wait = now2.WindowStart.Sub(now)
	}
	return nil, &ThrottledError{RetryAfter: wait, User: true}
}

// endGuess keeps a wrong guess counted and gives any other back (a right password, or a
// check that could not run): only failures use up the allowance, so a busy office
// behind one address can still sign in. A right password also opens the user's gate
// for good: its delays start again from the first.
func (s *Credentials) endGuess(ctx context.Context, g *passwordGuess, notWrong bool) {
	if !notWrong {
		return
	}
	s.giveBackGuess(ctx, g)
	if g.gate != nil {
		// The count must go down even if the request is gone; a failure here only leaves
		// the gate's delay as it was.
		_ = s.k.Writer(context.WithoutCancel(ctx)).
			Where("throttle_key = ? AND window_start = ?", g.gate.ThrottleKey, g.gate.WindowStart).Delete(&kernel.ThrottleWindow{}).Error
	}
}

// giveBackGuess uncounts a guess wherever beginGuess counted it.
func (s *Credentials) giveBackGuess(ctx context.Context, g *passwordGuess) {
	// The count must go down even if the request is gone; a failure here only leaves
	// the throttle stricter until the window ends.
	ctx = context.WithoutCancel(ctx)
	for _, key := range g.keys {
		_ = s.k.GiveBackHit(ctx, key, g.start)
	}
}
