package delivery

import (
	"testing"
	"time"

	"herald/channels"
)

func TestPolicyWithAccountAdjustments(t *testing.T) {
	five, delay, factor, maxDelay, long := 5, 10.0, 3.0, 120.0, 900.0
	p := DefaultPolicy.With(map[string]Adjustment{
		"transient":    {MaxRetries: &five, DelaySeconds: &delay, Factor: &factor, MaxDelaySeconds: &maxDelay},
		"rate_limited": {DelaySeconds: &long}, // within its default cap of an hour
		"auth":         {DelaySeconds: &long}, // longer than its 5 min cap: the cap follows
		"throttled":    {MaxRetries: &five},   // not adjustable: ignored
	})
	tr := p[channels.Transient]
	if tr.MaxRetries != 5 || tr.Base != 10*time.Second || tr.Factor != 3 || tr.Max != 2*time.Minute || !tr.CountsAttempt {
		t.Errorf("transient = %+v, want 5 retries, 10 s × 3 up to 2 min, counting attempts", tr)
	}
	if got := p[channels.RateLimited]; got.Base != 15*time.Minute || got.Max != time.Hour || got.MaxRetries != 10 {
		t.Errorf("rate_limited = %+v, want a 15 min first delay and the defaults otherwise", got)
	}
	if got := p[channels.Auth]; got.Base != 15*time.Minute || got.Max != 15*time.Minute {
		t.Errorf("auth = %+v, want the cap raised to the 15 min first delay", got)
	}
	if got := p[channels.Throttled]; got != DefaultPolicy[channels.Throttled] {
		t.Errorf("throttled = %+v, want the default untouched", got)
	}
	if DefaultPolicy[channels.Transient].Base != 2*time.Second || DefaultPolicy[channels.Auth].Max != 5*time.Minute {
		t.Error("With changed the default policy itself")
	}
	// Delays without jitter follow base × factor^(n−1), capped.
	noJitter := tr
	noJitter.Jitter = 0
	for n, want := range map[int]time.Duration{1: 10 * time.Second, 2: 30 * time.Second, 3: 90 * time.Second, 4: 2 * time.Minute} {
		if got := noJitter.Delay(n, 0); got != want {
			t.Errorf("transient retry %d waits %s, want %s", n, got, want)
		}
	}
	if got := DefaultPolicy.With(nil)[channels.Transient]; got != DefaultPolicy[channels.Transient] {
		t.Errorf("no adjustments: %+v", got)
	}
}
