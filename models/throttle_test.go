package models_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"herald/internal/testenv"
	"herald/models"
)

// Guesses past a user's limit are not refused, so that nobody can keep a user out by
// guessing wrong on purpose: each waits, and the wait doubles with every wrong one.
func TestGuessesPastTheUserLimitWait(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	now := models.Now()
	const parallel = 12
	var (
		wg             sync.WaitGroup
		mu             sync.Mutex
		prompt, waited int
	)
	for i := range parallel {
		wg.Go(func() {
			// Each from its own address: only the user's limit applies.
			delay, err := s.GuessDelay(ctx, "alice", fmt.Sprintf("10.0.1.%d", i), now, true)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case delay == 0:
				prompt++
			default:
				waited++
			}
		})
	}
	wg.Wait()
	if prompt != models.GuessesPerUser || waited != parallel-models.GuessesPerUser {
		t.Errorf("%d parallel guesses: %d answered at once, %d after a wait; want %d at once", parallel, prompt, waited, models.GuessesPerUser)
	}
	var delays []time.Duration
	for i := range 4 {
		delay, err := s.GuessDelay(ctx, "alice", fmt.Sprintf("10.0.1.%d", 50+i), now, true)
		if err != nil {
			t.Fatal(err)
		}
		delays = append(delays, delay)
	}
	for i := 1; i < len(delays); i++ {
		if delays[i] <= delays[i-1] && delays[i] < 30*time.Millisecond {
			t.Errorf("delays past the limit %v, want each longer than the last up to the cap", delays)
		}
	}
	if delay, err := s.GuessDelay(ctx, "bob", "10.0.1.1", now, true); err != nil || delay != 0 {
		t.Errorf("another username from one of the addresses: waited %s, %v", delay, err)
	}
}

func TestMain(m *testing.M) {
	models.UseShortGuessDelays()
	os.Exit(m.Run())
}

func TestGuessLimits(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	minute := models.Now().Truncate(time.Minute)
	guess := func(user, ip string, at time.Time, wrong bool) error {
		t.Helper()
		err := s.BeginGuess(ctx, user, ip, at, wrong)
		if err != nil && !errors.Is(err, models.ErrThrottled) {
			t.Fatal(err)
		}
		return err
	}

	t.Run("right passwords do not use up the allowance", func(t *testing.T) {
		for i := range 3 * models.GuessesPerUser {
			if err := guess("carol", "10.0.2.1", minute, false); err != nil {
				t.Fatalf("right guess %d: %v", i+1, err)
			}
		}
	})

	t.Run("the username's limit holds across the border of two minutes", func(t *testing.T) {
		late := minute.Add(59 * time.Second)
		for i := range models.GuessesPerUser {
			if delay, err := s.GuessDelay(ctx, "dave", fmt.Sprintf("10.0.3.%d", i), late, true); err != nil || delay != 0 {
				t.Fatalf("wrong guess %d: waited %s, %v", i+1, delay, err)
			}
		}
		if delay, err := s.GuessDelay(ctx, "dave", "10.0.3.99", minute.Add(61*time.Second), true); err != nil || delay == 0 {
			t.Errorf("guess two seconds later, in the next minute: waited %s, %v; want a wait", delay, err)
		}
		if delay, err := s.GuessDelay(ctx, "dave", "10.0.3.99", minute.Add(3*time.Minute), true); err != nil || delay != 0 {
			t.Errorf("guess once the minutes of the failures are over: waited %s, %v", delay, err)
		}
	})

	t.Run("the address's limit covers every username", func(t *testing.T) {
		for i := range models.GuessesPerIP {
			if err := guess(fmt.Sprintf("user%d", i), "10.0.4.1", minute, true); err != nil {
				t.Fatalf("wrong guess %d from one address: %v", i+1, err)
			}
		}
		if err := guess("erin", "10.0.4.1", minute, true); !errors.Is(err, models.ErrThrottled) {
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
	u, err := s.CreateUser(ctx, "alice", password, models.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	// Wrong guesses used up elsewhere, so that only the sixth check hashes: hashing is
	// slow under the race detector.
	for i := range models.GuessesPerUser - 1 {
		if err := s.BeginGuess(ctx, "alice", fmt.Sprintf("10.0.6.%d", i), models.Now(), true); err != nil {
			t.Fatal(err)
		}
	}
	var fe *models.FieldError
	if err := s.ChangePassword(ctx, u.ID, "not-the-password", "staple-battery-horse", "10.0.6.9"); !errors.As(err, &fe) || fe.Field != "current_password" {
		t.Fatalf("fifth wrong guess, on the current password: %v, want a FieldError on current_password", err)
	}
	// The sixth check, past the limit, waits first; the two share the allowance.
	if delay, err := s.GuessDelay(ctx, "alice", "10.0.6.10", models.Now(), true); err != nil || delay == 0 {
		t.Errorf("sign-in after five wrong guesses: waited %s, %v; want a wait", delay, err)
	}
	// Past the limit the right password still works: nobody is locked out.
	if _, err := s.Authenticate(ctx, "alice", password, "10.0.6.11"); err != nil {
		t.Errorf("sign-in with the right password past the limit: %v", err)
	}
}

func TestAuditOnce(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	entry := models.AuditEntry{Actor: "apikey:unknown", ActorType: "api_key", Action: "apikey.auth_failed", IP: "10.0.7.1"}
	var wrote []bool
	for _, key := range []string{"k 10.0.7.1", "k 10.0.7.1", "k 10.0.7.1", "k 10.0.7.2"} {
		ok, err := s.AuditOnce(ctx, entry, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		wrote = append(wrote, ok)
	}
	if fmt.Sprint(wrote) != "[true false false true]" {
		t.Errorf("AuditOnce wrote %v, want [true false false true]: once per key and minute", wrote)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM audit_log WHERE action = 'apikey.auth_failed'"); n != 2 {
		t.Errorf("%d audit rows, want 2", n)
	}
}
