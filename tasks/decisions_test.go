package tasks

import (
	"errors"
	"testing"
	"time"

	"herald/channels"
	"herald/delivery"
	"herald/kernel"
	"herald/models"
)

// TestNotClaimedDecisions: what a single-message task does when its message could not
// be claimed.
func TestNotClaimedDecisions(t *testing.T) {
	t.Parallel()
	now := kernel.Now()
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	tests := []struct {
		name     string
		m        *models.Message
		retry    bool
		minDelay time.Duration
		maxDelay time.Duration
	}{
		{"deleted", nil, false, 0, 0},
		{"sent", &models.Message{Status: models.StatusSent}, false, 0, 0},
		{"cancelled", &models.Message{Status: models.StatusCancelled}, false, 0, 0},
		{"stopped", &models.Message{Status: models.StatusStopped}, false, 0, 0},
		{"held elsewhere, lease long", &models.Message{Status: models.StatusSending, LeaseUntil: at(time.Minute)}, true, recheckClaimed - time.Second, recheckClaimed},
		{"held elsewhere, lease ending", &models.Message{Status: models.StatusSending, LeaseUntil: at(2 * time.Second)}, true, 2 * time.Second, 3*time.Second + 100*time.Millisecond},
		{"not due yet", &models.Message{Status: models.StatusFailed, NextAttemptAt: at(30 * time.Second)}, true, 29 * time.Second, 30 * time.Second},
		{"due and free", &models.Message{Status: models.StatusPending, NextAttemptAt: at(-time.Second)}, true, time.Second, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := notClaimed(tt.m)
			var re *retryError
			if got := errors.As(err, &re); got != tt.retry {
				t.Fatalf("retry = %v (%v), want %v", got, err, tt.retry)
			}
			if tt.retry && (re.delay < tt.minDelay || re.delay > tt.maxDelay) {
				t.Errorf("delay %s, want between %s and %s", re.delay, tt.minDelay, tt.maxDelay)
			}
		})
	}
}

// TestFailureDecisions: the state a classified failure leads to, by the policy table.
func TestFailureDecisions(t *testing.T) {
	t.Parallel()
	s := &Sender{policy: delivery.DefaultPolicy}
	tests := []struct {
		name       string
		m          models.Message
		class      channels.Class
		want       models.Status
		counts     bool
		minDelay   time.Duration
		maxDelay   time.Duration
		classTries int
	}{
		{"transient, first", models.Message{MaxAttempts: 3}, channels.Transient, models.StatusFailed, true, 1600 * time.Millisecond, 2400 * time.Millisecond, 1},
		{"transient, last attempt", models.Message{MaxAttempts: 3, Attempts: 2}, channels.Transient, models.StatusStopped, true, 0, 0, 1},
		{"permanent", models.Message{MaxAttempts: 3}, channels.Permanent, models.StatusStopped, true, 0, 0, 1},
		{"rate limited keeps attempts", models.Message{MaxAttempts: 1}, channels.RateLimited, models.StatusFailed, false, time.Minute, time.Minute, 1},
		{"rate limited, eleventh", models.Message{MaxAttempts: 3, ErrorClass: "rate_limited", ClassRetries: 10}, channels.RateLimited, models.StatusStopped, false, 0, 0, 11},
		{"auth, first", models.Message{MaxAttempts: 3}, channels.Auth, models.StatusFailed, true, 5 * time.Minute, 5 * time.Minute, 1},
		{"auth, second", models.Message{MaxAttempts: 3, Attempts: 1, ErrorClass: "auth", ClassRetries: 1}, channels.Auth, models.StatusStopped, true, 0, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := kernel.Now()
			o := s.failure(&tt.m, nil, &channels.Error{Class: tt.class, Err: errors.New("refused")}, true, before, time.Millisecond)
			if o.Status != tt.want || o.CountsAttempt != tt.counts || o.ClassRetries != tt.classTries {
				t.Fatalf("got %s (counts %v, class retries %d), want %s (counts %v, class retries %d)",
					o.Status, o.CountsAttempt, o.ClassRetries, tt.want, tt.counts, tt.classTries)
			}
			if tt.want == models.StatusStopped {
				if o.NextAttemptAt != nil {
					t.Errorf("a stopped message has a next attempt at %s", o.NextAttemptAt)
				}
				return
			}
			if d := o.NextAttemptAt.Sub(before); d < tt.minDelay || d > tt.maxDelay+time.Second {
				t.Errorf("next attempt in %s, want between %s and %s", d, tt.minDelay, tt.maxDelay)
			}
		})
	}
}

// TestRetryScale: a sender with a retry scale (HERALD_TEST_KNOBS retry_scale) shortens
// the policy's delays by it, and keeps a platform's Retry-After as it came.
func TestRetryScale(t *testing.T) {
	t.Parallel()
	s := &Sender{policy: delivery.DefaultPolicy, retryScale: 0.1}
	before := kernel.Now()
	o := s.failure(&models.Message{MaxAttempts: 3}, nil, &channels.Error{Class: channels.RateLimited, Err: errors.New("slow down")}, true, before, time.Millisecond)
	if d := o.NextAttemptAt.Sub(before); d < 6*time.Second || d > 7*time.Second {
		t.Errorf("rate limited, scaled by 0.1: next attempt in %s, want 6s (a tenth of the 60s rule)", d)
	}
	o = s.failure(&models.Message{MaxAttempts: 3}, nil, &channels.Error{Class: channels.RateLimited, RetryAfter: 30 * time.Second, Err: errors.New("slow down")}, true, before, time.Millisecond)
	if d := o.NextAttemptAt.Sub(before); d < 30*time.Second || d > 31*time.Second {
		t.Errorf("rate limited with Retry-After 30s: next attempt in %s, want 30s", d)
	}
}
