package delivery

import (
	"maps"
	"math"
	"math/rand/v2"
	"time"

	"herald/channels"
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

// DefaultPolicy is the retry table (README.md, docs/retries.md). Throttled waits are
// computed by the limiter, not by this table; the rule only says they do not use
// attempts.
var DefaultPolicy = Policy{
	channels.Throttled:   {MaxRetries: -1, CountsAttempt: false},
	channels.RateLimited: {MaxRetries: 10, CountsAttempt: false, Base: 60 * time.Second, Factor: 1.5, Max: time.Hour},
	channels.Transient:   {MaxRetries: -1, CountsAttempt: true, Base: 2 * time.Second, Factor: 2, Jitter: 0.2, Max: 10 * time.Minute},
	channels.Auth:        {MaxRetries: 1, CountsAttempt: true, Base: 5 * time.Minute, Factor: 1, Max: 5 * time.Minute},
	// Not retried by default; the delay applies when an account allows retries.
	channels.Permanent: {MaxRetries: 0, CountsAttempt: true, Base: time.Minute, Factor: 2, Max: time.Hour},
}

// Adjustment changes one error class's rule for an account. A nil field keeps the
// default (DefaultPolicy).
type Adjustment struct {
	// MaxRetries bounds the retries of the class (attempts still stop at max_attempts).
	MaxRetries *int `json:"max_retries,omitempty"`
	// DelaySeconds is the wait before the first retry.
	DelaySeconds *float64 `json:"delay_seconds,omitempty"`
	// Factor multiplies the wait at each further retry.
	Factor *float64 `json:"factor,omitempty"`
	// MaxDelaySeconds caps the wait.
	MaxDelaySeconds *float64 `json:"max_delay_seconds,omitempty"`
}

// Empty says the adjustment changes nothing.
func (a Adjustment) Empty() bool {
	return a.MaxRetries == nil && a.DelaySeconds == nil && a.Factor == nil && a.MaxDelaySeconds == nil
}

// AdjustableClasses are the error classes whose retries an account may adjust, in the
// order forms show them. Throttled waits are computed by the limiter and are not
// adjustable.
var AdjustableClasses = []string{string(channels.RateLimited), string(channels.Transient), string(channels.Auth), string(channels.Permanent)}

// Bounds of the adjustable values.
const (
	MaxRetriesLimit = 100
	MaxDelaySeconds = 24 * 60 * 60
	MaxFactor       = 10
)

// With returns the policy with an account's adjustments (by class) applied; the policy
// itself is not changed. A first delay longer than the cap raises the cap to it, so an
// adjusted delay is never silently cut back to the default cap.
func (p Policy) With(adj map[string]Adjustment) Policy {
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

// Rule returns the rule of a class; a class the policy does not know is retried as
// transient.
func (p Policy) Rule(class channels.Class) Rule {
	if r, ok := p[class]; ok {
		return r
	}
	return p[channels.Transient]
}

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

// Failure is a failed attempt of a message, as the retry decision sees it: the
// classified error and the message's counters before it.
type Failure struct {
	Class channels.Class
	// Ambiguous says the platform may have the message despite the error.
	Ambiguous bool
	// RetryAfter is the provider's own wait, when it gave one.
	RetryAfter time.Duration
	// Attempts are the attempts used so far, of MaxAttempts.
	Attempts, MaxAttempts int
	// ClassRetries are the retries of this class so far.
	ClassRetries int
}

// Verdict is what a failure does to its message.
type Verdict struct {
	// Status is Failed (retried after Delay) or Stopped.
	Status Status
	// Delay is the wait before the retry, when Status is Failed.
	Delay time.Duration
	// CountsAttempt says whether the failure used one of the message's attempts.
	CountsAttempt bool
	// ClassRetries are the retries of the class, this one included.
	ClassRetries int
	// Unknown says the outcome of the call cannot be known (an ambiguous error): the
	// message stops and a person decides.
	Unknown bool
}

// Decide applies the policy to a failure. An ambiguous failure stops the message at
// once: sending it again could deliver it twice. Otherwise the message stops when the
// failure used its last attempt or its class's last retry, and is retried after the
// class's delay if not.
func (p Policy) Decide(f Failure) Verdict {
	rule := p.Rule(f.Class)
	v := Verdict{CountsAttempt: rule.CountsAttempt, ClassRetries: f.ClassRetries + 1}
	attempts := f.Attempts
	if rule.CountsAttempt {
		attempts++
	}
	switch {
	case f.Ambiguous:
		v.Status, v.Unknown = Stopped, true
	case rule.CountsAttempt && attempts >= f.MaxAttempts,
		rule.MaxRetries >= 0 && v.ClassRetries > rule.MaxRetries:
		v.Status = Stopped
	default:
		v.Status = Failed
		v.Delay = rule.Delay(v.ClassRetries, f.RetryAfter)
	}
	return v
}
