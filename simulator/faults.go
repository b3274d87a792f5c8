package simulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Faults are the injected failure rates (each between 0 and 1, together at most 1) and
// behaviours. The zero value injects nothing.
type Faults struct {
	// Latency is added before every answer.
	Latency Duration `json:"latency"`
	// FailRate answers with a server error (HTTP 500, SMTP 451).
	FailRate float64 `json:"fail_rate"`
	// TimeoutRate never answers and records nothing.
	TimeoutRate float64 `json:"timeout_rate"`
	// ThrottleRate answers with the platform's rate-limit response.
	ThrottleRate float64 `json:"throttle_rate"`
	// RejectRate answers with a permanent error such as an invalid recipient.
	RejectRate float64 `json:"reject_rate"`
	// AcceptThenTimeoutRate records the delivery and then never answers: the sender
	// cannot tell this from a lost request, which is exactly what it must cope with.
	AcceptThenTimeoutRate float64 `json:"accept_then_timeout_rate"`
	// AuthFail makes every call fail authentication.
	AuthFail bool `json:"auth_fail"`
}

// Validate reports the first rate outside [0, 1], a negative latency, or rates that add
// up to more than 1, naming the JSON field concerned.
func (f Faults) Validate() error {
	return f.validate(func(field string) string { return field })
}

// rateSumSlack absorbs float rounding, so rates such as 0.1 + 0.2 + 0.7 still count as 1.
const rateSumSlack = 1e-9

// validate is Validate with field names spelled by name, so the command can speak of
// flags where the control endpoint speaks of JSON fields.
func (f Faults) validate(name func(field string) string) error {
	if f.Latency < 0 {
		return fmt.Errorf("%s must not be negative, got %s", name("latency"), time.Duration(f.Latency))
	}
	rates := f.rates()
	sum := 0.0
	names := make([]string, 0, len(rates))
	for _, r := range rates {
		// Written as a negated range so NaN fails too.
		if !(r.rate >= 0 && r.rate <= 1) {
			return fmt.Errorf("%s must be between 0 and 1, got %v", name(r.field), r.rate)
		}
		sum += r.rate
		names = append(names, name(r.field))
	}
	if sum > 1+rateSumSlack {
		return fmt.Errorf("%s add up to %v, more than 1", strings.Join(names, " + "), sum)
	}
	return nil
}

// namedRate is one fault rate with its JSON field name and the outcome it causes.
type namedRate struct {
	field   string
	rate    float64
	outcome outcome
}

// rates lists the rates in the fixed order the draw compares them in; changing the order
// changes what a given seed produces.
func (f Faults) rates() [5]namedRate {
	return [5]namedRate{
		{"fail_rate", f.FailRate, outcomeFail},
		{"timeout_rate", f.TimeoutRate, outcomeTimeout},
		{"throttle_rate", f.ThrottleRate, outcomeThrottle},
		{"reject_rate", f.RejectRate, outcomeReject},
		{"accept_then_timeout_rate", f.AcceptThenTimeoutRate, outcomeAcceptThenTimeout},
	}
}

// Duration is a time.Duration that reads and writes JSON as a Go duration string ("5ms").
// On input it also accepts a number of nanoseconds.
type Duration time.Duration

// MarshalJSON writes the duration as a string such as "5ms".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil // JSON convention: null leaves the value alone
	}
	if bytes.HasPrefix(data, []byte(`"`)) {
		var text string
		if err := json.Unmarshal(data, &text); err != nil {
			return err
		}
		parsed, err := time.ParseDuration(text)
		if err != nil {
			return fmt.Errorf("duration %q: want a Go duration such as \"5ms\"", text)
		}
		*d = Duration(parsed)
		return nil
	}
	nanos, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return fmt.Errorf("duration %s: want a string such as \"5ms\" or whole nanoseconds", data)
	}
	*d = Duration(nanos)
	return nil
}

// String formats the duration like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// FaultKind names the kind of an injected fault returned by Accept.
type FaultKind string

// The fault kinds Accept reports. An accept-then-timeout fault reports FaultTimeout, as
// the caller cannot tell it apart from a plain timeout.
const (
	FaultFail     FaultKind = "fail"
	FaultTimeout  FaultKind = "timeout"
	FaultThrottle FaultKind = "throttle"
	FaultReject   FaultKind = "reject"
	FaultAuth     FaultKind = "auth"
)

// Fault is the error Accept returns for an injected fault.
type Fault struct {
	Kind FaultKind
	// RetryAfter is how long a throttled caller should wait; zero for other kinds.
	RetryAfter time.Duration
}

// Error describes the fault.
func (f *Fault) Error() string {
	if f.RetryAfter > 0 {
		return fmt.Sprintf("simulator: injected %s fault (retry after %s)", f.Kind, f.RetryAfter)
	}
	return fmt.Sprintf("simulator: injected %s fault", f.Kind)
}
