package tasks

import (
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"time"

	"herald/channels"
	"herald/models"
)

// Rule is the retry policy of one error class.
type Rule struct {
	// MaxRetries bounds retries of this class; -1 means until max_attempts runs out.
	MaxRetries int
	// CountsAttempt says whether a failure of this class uses one of the message's attempts.
	CountsAttempt bool
	Base          time.Duration
	Factor        float64
	Jitter        float64 // ± fraction of the delay
	Max           time.Duration
}

// Policy maps error classes to their rules.
type Policy map[channels.Class]Rule

// DefaultPolicy is the retry table (README.md, docs/retries.md). Throttled waits are computed by the
// limiter, not by this table; the rule only says they do not use attempts.
var DefaultPolicy = Policy{
	channels.Throttled:   {MaxRetries: -1, CountsAttempt: false},
	channels.RateLimited: {MaxRetries: 10, CountsAttempt: false, Base: 60 * time.Second, Factor: 1.5, Max: time.Hour},
	channels.Transient:   {MaxRetries: -1, CountsAttempt: true, Base: 2 * time.Second, Factor: 2, Jitter: 0.2, Max: 10 * time.Minute},
	channels.Auth:        {MaxRetries: 1, CountsAttempt: true, Base: 5 * time.Minute, Factor: 1, Max: 5 * time.Minute},
	// Not retried by default; the delay applies when an account allows retries.
	channels.Permanent: {MaxRetries: 0, CountsAttempt: true, Base: time.Minute, Factor: 2, Max: time.Hour},
}

// With returns the policy with an account's adjustments applied; the policy itself is
// not changed. A first delay longer than the cap raises the cap to it, so an adjusted
// delay is never silently cut back to the default cap.
func (p Policy) With(adj models.RetryPolicy) Policy {
	if len(adj) == 0 {
		return p
	}
	out := maps.Clone(p)
	for class, a := range adj {
		r, ok := out[channels.Class(class)]
		if !ok || class == string(channels.Throttled) {
			continue
		}
		if a.MaxRetries != nil {
			r.MaxRetries = *a.MaxRetries
		}
		if a.DelaySeconds != nil {
			r.Base = seconds(*a.DelaySeconds)
		}
		if a.Factor != nil {
			r.Factor = *a.Factor
		}
		if a.MaxDelaySeconds != nil {
			r.Max = seconds(*a.MaxDelaySeconds)
		}
		r.Max = max(r.Max, r.Base)
		out[channels.Class(class)] = r
	}
	return out
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Delay returns the wait before retry number n (1-based) of a class, honouring a
// provider's Retry-After when it gave one.
func (r Rule) Delay(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, r.Max)
	}
	d := float64(r.Base) * math.Pow(r.Factor, float64(max(n-1, 0)))
	if r.Jitter > 0 {
		d *= 1 + r.Jitter*(2*rand.Float64()-1)
	}
	return min(time.Duration(d), r.Max)
}

// retryError tells Asynq to run the task again after a delay Herald chose.
type retryError struct {
	delay  time.Duration
	reason string
}

func (e *retryError) Error() string { return "retry in " + e.delay.String() + ": " + e.reason }

// retryDelay is Asynq's RetryDelayFunc: Herald's own delays, else Asynq's default.
func retryDelay(n int, err error) time.Duration {
	var re *retryError
	if errors.As(err, &re) {
		return max(re.delay, 0)
	}
	// An unexpected error (a database outage, say): back off like a transient failure.
	return DefaultPolicy[channels.Transient].Delay(n+1, 0)
}

// isFailure keeps Herald's deliberate retries out of Asynq's failure counter, which would
// otherwise archive a message Herald still means to deliver.
func isFailure(err error) bool {
	var re *retryError
	return !errors.As(err, &re)
}
