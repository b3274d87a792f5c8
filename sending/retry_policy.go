package sending

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"herald/delivery"
	"herald/kernel"
)

// RetryRule adjusts one error class's retry rule for an account; a nil field keeps the
// default. The retry table and how adjustments apply to it are delivery's
// (delivery/retry.go); this file stores and validates them.
type RetryRule = delivery.Adjustment

// RetryPolicy is an account's adjustments to the default retry policy, by error class.
// It is stored as JSON in accounts.retry_policy; no adjustment is stored as NULL.
type RetryPolicy map[string]RetryRule

// RetryClasses are the error classes whose retries an account may adjust, in the order
// forms show them.
var RetryClasses = delivery.AdjustableClasses

// Bounds of the adjustable values.
const (
	maxRetriesLimit = delivery.MaxRetriesLimit
	maxDelaySeconds = delivery.MaxDelaySeconds
	maxFactor       = delivery.MaxFactor
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
				return kernel.Invalid(field, "accounts.error.retry_throttled")
			}
			return kernel.Invalid(field, "accounts.error.retry_class", "Classes", fmt.Sprint(RetryClasses))
		}
		switch {
		case r.MaxRetries != nil && (*r.MaxRetries < 0 || *r.MaxRetries > maxRetriesLimit):
			return kernel.Invalid(field+".max_retries", "accounts.error.retry_count", "Max", maxRetriesLimit)
		case r.DelaySeconds != nil && (*r.DelaySeconds < 1 || *r.DelaySeconds > maxDelaySeconds):
			return kernel.Invalid(field+".delay_seconds", "accounts.error.retry_seconds", "Max", maxDelaySeconds)
		case r.Factor != nil && (*r.Factor < 1 || *r.Factor > maxFactor):
			return kernel.Invalid(field+".factor", "accounts.error.retry_factor", "Max", maxFactor)
		case r.MaxDelaySeconds != nil && (*r.MaxDelaySeconds < 1 || *r.MaxDelaySeconds > maxDelaySeconds):
			return kernel.Invalid(field+".max_delay_seconds", "accounts.error.retry_seconds", "Max", maxDelaySeconds)
		case r.DelaySeconds != nil && r.MaxDelaySeconds != nil && *r.MaxDelaySeconds < *r.DelaySeconds:
			return kernel.Invalid(field+".max_delay_seconds", "accounts.error.retry_cap_below_delay")
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
		return fmt.Errorf("sending: retry policy: cannot scan %T", v)
	}
	var out RetryPolicy
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Errorf("sending: retry policy: %w", err)
	}
	*p = out // Value stored it compacted
	return nil
}
