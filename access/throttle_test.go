package access_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"herald/access"
	"herald/audit"
	"herald/internal/testenv"
	"herald/kernel"
)

// Past a user's limit, guesses pass one at a time through a gate that closes for a
// delay after each; a guess while it is closed is refused at once with the time until
// it opens, whatever the concurrency and however many addresses: of 30 parallel guesses
// at most GuessesPerUser+1 reach the check.
func TestParallelGuessesPastTheUserLimitAreRefused(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	now := kernel.Now()
	const parallel = 30
	var (
		wg               sync.WaitGroup
		mu               sync.Mutex
		checked, refused int
		retry            []time.Duration
	)
	for i := range parallel {
		wg.Go(func() {
			// Each from its own address: only the user's limit applies.
			err := s.Access().BeginGuess(ctx, "alice", fmt.Sprintf("10.0.1.%d", i), now, true)
			mu.Lock()
			defer mu.Unlock()
			var te *access.ThrottledError
			switch {
			case err == nil:
				checked++
			case errors.As(err, &te) && errors.Is(err, access.ErrThrottled) && te.User:
				refused++
				retry = append(retry, te.RetryAfter)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if checked > access.GuessesPerUser+1 || checked+refused != parallel {
		t.Errorf("%d parallel guesses: %d reached the check, %d refused; want at most %d checked", parallel, checked, refused, access.GuessesPerUser+1)
	}
	for _, d := range retry {
		if d <= 0 || d > 2*time.Second {
			t.Errorf("a refusal says to retry in %s, want the first delay (1 s, whole seconds)", d)
			break
		}
	}
	// Each guess after the gate opens passes, and closes it for longer.
	at, last := now, time.Duration(0)
	for i := range 5 {
		err := s.Access().BeginGuess(ctx, "alice", "10.0.1.200", at, true)
		te, ok := errors.AsType[*access.ThrottledError](err)
		if !ok {
			t.Fatalf("guess %d at once after one passed: %v, want a refusal", i, err)
		}
		if te.RetryAfter <= last {
			t.Errorf("delays past the limit: %s after %s, want each longer", te.RetryAfter, last)
		}
		last = te.RetryAfter
		at = at.Add(te.RetryAfter)
		if err := s.Access().BeginGuess(ctx, "alice", "10.0.1.201", at, true); err != nil {
			t.Fatalf("a guess once the gate opened: %v", err)
		}
	}
	if err := s.Access().BeginGuess(ctx, "bob", "10.0.1.1", now, true); err != nil {
		t.Errorf("another username from one of the addresses: %v", err)
	}
}

// ASVS 2.2.1: fewer than 100 failed checks per account in an hour, however fast and
// from however many addresses an attacker guesses: here one guess at every moment the
// gate opens, and guesses in between that are refused.
func TestWrongGuessesPerHourStayUnderASVSLimit(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	start := kernel.Now().Truncate(time.Minute)
	checked := 0
	for at, i := start, 0; at.Before(start.Add(time.Hour)); i++ {
		err := s.Access().BeginGuess(ctx, "mallory-target", fmt.Sprintf("10.1.%d.%d", i/250, i%250), at, true)
		te, refused := errors.AsType[*access.ThrottledError](err)
		switch {
		case err == nil:
			checked++
		case !refused:
			t.Fatal(err)
		}
		step := time.Second
		if refused && te.RetryAfter > 0 {
			step = te.RetryAfter
		}
		at = at.Add(step)
	}
	t.Logf("%d wrong passwords checked in an hour of guessing at every opening of the gate", checked)
	if checked >= 100 {
		t.Errorf("%d wrong passwords checked in an hour, want under 100 (ASVS 2.2.1)", checked)
	}
	// The right password once the gate opens still signs in: nobody is locked out.
	if _, err := s.Access().CreateUser(ctx, "carl", "correct-horse-battery", access.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	at := start
	for range 3 * access.GuessesPerUser {
		if _, err := s.Access().AuthenticateAt(ctx, "carl", "wrong-password", "10.2.0.1", at); !errors.Is(err, access.ErrThrottled) && !errors.Is(err, access.ErrBadCredentials) {
			t.Fatal(err)
		}
	}
	_, err := s.Access().AuthenticateAt(ctx, "carl", "correct-horse-battery", "10.2.0.2", at)
	te, ok := errors.AsType[*access.ThrottledError](err)
	if !ok {
		t.Fatalf("the right password while the gate is closed: %v, want a refusal with a time", err)
	}
	if _, err := s.Access().AuthenticateAt(ctx, "carl", "correct-horse-battery", "10.2.0.2", at.Add(te.RetryAfter)); err != nil {
		t.Errorf("the right password once the gate opened: %v", err)
	}
	// A right password opens the gate for good.
	if _, err := s.Access().AuthenticateAt(ctx, "carl", "wrong-password", "10.2.0.3", at.Add(te.RetryAfter)); !errors.Is(err, access.ErrBadCredentials) {
		t.Errorf("a wrong password right after the right one: %v, want it checked", err)
	}
}

func TestGuessLimits(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	minute := kernel.Now().Truncate(time.Minute)
	guess := func(user, ip string, at time.Time, wrong bool) error {
		t.Helper()
		err := s.Access().BeginGuess(ctx, user, ip, at, wrong)
		if err != nil && !errors.Is(err, access.ErrThrottled) {
			t.Fatal(err)
		}
		return err
	}

	t.Run("right passwords do not use up the allowance", func(t *testing.T) {
		for i := range 3 * access.GuessesPerUser {
			if err := guess("carol", "10.0.2.1", minute, false); err != nil {
				t.Fatalf("right guess %d: %v", i+1, err)
			}
		}
	})

	t.Run("the username's limit holds across the border of two minutes", func(t *testing.T) {
		late := minute.Add(59 * time.Second)
		for i := range access.GuessesPerUser {
			if err := guess("dave", fmt.Sprintf("10.0.3.%d", i), late, true); err != nil {
				t.Fatalf("wrong guess %d: %v", i+1, err)
			}
		}
		// In the next minute the sixth passes the gate, and closes it behind itself.
		next := minute.Add(61 * time.Second)
		if err := guess("dave", "10.0.3.98", next, true); err != nil {
			t.Errorf("the sixth guess, two seconds later: %v; want it through the gate", err)
		}
		if err := guess("dave", "10.0.3.99", next, true); !errors.Is(err, access.ErrThrottled) {
			t.Errorf("the seventh at once, in the next minute: %v; want ErrThrottled", err)
		}
	})

	t.Run("the address's limit covers every username", func(t *testing.T) {
		for i := range access.GuessesPerIP {
			if err := guess(fmt.Sprintf("user%d", i), "10.0.4.1", minute, true); err != nil {
				t.Fatalf("wrong guess %d from one address: %v", i+1, err)
			}
		}
		if err := guess("erin", "10.0.4.1", minute, true); !errors.Is(err, access.ErrThrottled) {
			t.Errorf("a new username from the address: %v, want ErrThrottled", err)
		}
		if err := guess("erin", "10.0.4.2", minute, true); err != nil {
			t.Errorf("the same username from another address: %v", err)
		}
	})

	t.Run("long usernames are cut to fit", func(t *testing.T) {
		for _, name := range []string{strings.Repeat("u", 300), "a" + strings.Repeat("é", 100)} {
			if err := guess(name, "10.0.5.1", minute, true); err != nil {
				t.Errorf("guess for a %d-byte username: %v", len(name), err)
			}
		}
	})
}

func TestPasswordChecksAreThrottled(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	const password = "correct-horse-battery"
	u, err := s.Access().CreateUser(ctx, "alice", password, access.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	// Wrong guesses used up elsewhere, so that only the sixth check hashes: hashing is
	// slow under the race detector.
	for i := range access.GuessesPerUser - 1 {
		if err := s.Access().BeginGuess(ctx, "alice", fmt.Sprintf("10.0.6.%d", i), kernel.Now(), true); err != nil {
			t.Fatal(err)
		}
	}
	var fe *kernel.FieldError
	if err := s.Access().ChangePassword(ctx, u.ID, "not-the-password", "staple-battery-horse", "10.0.6.9"); !errors.As(err, &fe) || fe.Field != "current_password" {
		t.Fatalf("fifth wrong guess, on the current password: %v, want a FieldError on current_password", err)
	}
	// The sixth check passes the gate and closes it; the two share the allowance, so
	// the seventh, on the current password, is refused without a check.
	now := kernel.Now()
	if err := s.Access().BeginGuess(ctx, "alice", "10.0.6.10", now, true); err != nil {
		t.Errorf("the sixth guess: %v", err)
	}
	_, err = s.Access().CheckCurrentPassword(ctx, u.ID, password, "10.0.6.12")
	refusedAt := kernel.Now()
	te, ok := errors.AsType[*access.ThrottledError](err)
	if !ok || access.RetryAfterSeconds(err) < 1 {
		t.Fatalf("the right current password while the gate is closed: %v, want a refusal with a time", err)
	}
	// Once it opens the right password still works: nobody is locked out.
	if _, err := s.Access().AuthenticateAt(ctx, "alice", password, "10.0.6.11", refusedAt.Add(te.RetryAfter)); err != nil {
		t.Errorf("sign-in with the right password once the gate opened: %v", err)
	}
}

func TestAuditOnce(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	entry := audit.Entry{Actor: "apikey:unknown", ActorType: "api_key", Action: "apikey.auth_failed", IP: "10.0.7.1"}
	var wrote []bool
	for _, key := range []string{"k 10.0.7.1", "k 10.0.7.1", "k 10.0.7.1", "k 10.0.7.2"} {
		ok, err := s.AuditLog().Once(ctx, entry, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		wrote = append(wrote, ok)
	}
	if fmt.Sprint(wrote) != "[true false false true]" {
		t.Errorf("Once wrote %v, want [true false false true]: once per key and minute", wrote)
	}
	if n := testenv.Count(t, s, "SELECT COUNT(*) FROM audit_log WHERE action = 'apikey.auth_failed'"); n != 2 {
		t.Errorf("%d audit rows, want 2", n)
	}
}
