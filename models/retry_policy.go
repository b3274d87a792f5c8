package models

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// RetryRule adjusts one error class's retry rule for an account. A nil field keeps the
// default: tasks.DefaultPolicy, the table in README.md ("Delivery, limits and retries").
type RetryRule struct {
	// MaxRetries bounds the retries of the class (attempts still stop at max_attempts).
	MaxRetries *int `json:"max_retries,omitempty"`
	// DelaySeconds is the wait before the first retry.
	DelaySeconds *float64 `json:"delay_seconds,omitempty"`
	// Factor multiplies the wait at each further retry.
	Factor *float64 `json:"factor,omitempty"`
	// MaxDelaySeconds caps the wait.
	MaxDelaySeconds *float64 `json:"max_delay_seconds,omitempty"`
}

// Empty says the rule changes nothing.
func (r RetryRule) Empty() bool {
	return r.MaxRetries == nil && r.DelaySeconds == nil && r.Factor == nil && r.MaxDelaySeconds == nil
}

// RetryPolicy is an account's adjustments to the default retry policy, by error class.
// It is stored as JSON in accounts.retry_policy; no adjustment is stored as NULL.
type RetryPolicy map[string]RetryRule

// RetryClasses are the error classes whose retries an account may adjust, in the order
// forms show them. Throttled waits are computed by the limiter and are not adjustable.
var RetryClasses = []string{"rate_limited", "transient", "auth", "permanent"}

// Bounds of the adjustable values.
const (
	maxRetriesLimit = 100
	maxDelaySeconds = 24 * 60 * 60
	maxFactor       = 10
)

// Validate checks every adjustment; the error names the field, e.g.
// retry_policy.transient.delay_seconds.
func (p RetryPolicy) Validate() error {
	// Sorted, so the same input always reports the same field first.
	for _, class := range slices.Sorted(maps.Keys(p)) {
		r := p[class]
		field := "retry_policy." + class
		if !slices.Contains(RetryClasses, class) {
			if class == "throttled" {
				return Invalid(field, "accounts.error.retry_throttled")
			}
			return Invalid(field, "accounts.error.retry_class", "Classes", fmt.Sprint(RetryClasses))
		}
		switch {
		case r.MaxRetries != nil && (*r.MaxRetries < 0 || *r.MaxRetries > maxRetriesLimit):
			return Invalid(field+".max_retries", "accounts.error.retry_count", "Max", maxRetriesLimit)
		case r.DelaySeconds != nil && (*r.DelaySeconds < 1 || *r.DelaySeconds > maxDelaySeconds):
			return Invalid(field+".delay_seconds", "accounts.error.retry_seconds", "Max", maxDelaySeconds)
		case r.Factor != nil && (*r.Factor < 1 || *r.Factor > maxFactor):
			return Invalid(field+".factor", "accounts.error.retry_factor", "Max", maxFactor)
		case r.MaxDelaySeconds != nil && (*r.MaxDelaySeconds < 1 || *r.MaxDelaySeconds > maxDelaySeconds):
			return Invalid(field+".max_delay_seconds", "accounts.error.retry_seconds", "Max", maxDelaySeconds)
		case r.DelaySeconds != nil && r.MaxDelaySeconds != nil && *r.MaxDelaySeconds < *r.DelaySeconds:
			return Invalid(field+".max_delay_seconds", "accounts.error.retry_cap_below_delay")
		}
	}
	return nil
}

// Compact drops classes whose rule changes nothing.
func (p RetryPolicy) Compact() RetryPolicy {
	var out RetryPolicy
	for class, r := range p {
		if r.Empty() {
			continue
		}
		if out == nil {
			out = RetryPolicy{}
		}
		out[class] = r
	}
	return out
}

// Value stores the policy as JSON, or NULL when it adjusts nothing.
func (p RetryPolicy) Value() (driver.Value, error) {
	p = p.Compact()
	if len(p) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(p)
	return string(b), err
}

// Scan reads the stored JSON.
func (p *RetryPolicy) Scan(v any) error {
	var b []byte
	switch x := v.(type) {
	case nil:
		*p = nil
		return nil
	case string:
		b = []byte(x)
	case []byte:
		b = x
	default:
		return fmt.Errorf("models: retry policy: cannot scan %T", v)
	}
	var out RetryPolicy
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("models: retry policy: %w", err)
	}
	*p = out // Value stored it compacted
	return nil
}
