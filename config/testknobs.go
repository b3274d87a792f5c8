package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TestKnobs shorten the waits Herald builds in, so that tests of leases, escalation,
// retries and the sweeper finish in seconds instead of minutes. They come from one
// variable, HERALD_TEST_KNOBS, named for what it is for, so that no production setting
// shortens a wait by accident; Herald logs a warning at start whenever it is set. A zero
// field (or an absent knob) keeps the production value.
//
//	HERALD_TEST_KNOBS="lease=2s,step_wait=2s,retry_scale=0.1,sweep_every=5s,sweep_grace=0s"
type TestKnobs struct {
	// Lease is how long a send claim outlives its worker's last heartbeat (15s in
	// production); renewals come every fifth of it.
	Lease time.Duration
	// StepWait is the shortest wait an escalation step may be given (30s in production).
	StepWait time.Duration
	// RetryScale multiplies every retry delay the retry table and the accounts'
	// adjustments give (1 in production); a platform's Retry-After is kept.
	RetryScale float64
	// SweepEvery is how often the full sweep runs (1m in production).
	SweepEvery time.Duration
	// SweepGrace is how long past due the sweeper leaves a message to its own task
	// (30s in production); SweepGraceSet tells zero, which looks at every due message,
	// from unset.
	SweepGrace    time.Duration
	SweepGraceSet bool
	// IdleAfter is how long a worker stays quick after its last task before it polls
	// slowly again (1m in production).
	IdleAfter time.Duration
	// IdleCheck is how often an idle worker looks for a task (1s in production); a
	// worker's shutdown waits for the look's sleep to end.
	IdleCheck time.Duration
}

// Set reports whether any knob is set.
func (k TestKnobs) Set() bool {
	return k.Lease != 0 || k.StepWait != 0 || k.RetryScale != 0 || k.SweepEvery != 0 || k.SweepGraceSet || k.IdleAfter != 0 || k.IdleCheck != 0
}

// String lists the knobs that are set, in HERALD_TEST_KNOBS's own form.
func (k TestKnobs) String() string {
	var parts []string
	for _, kn := range knobs {
		if v := kn.get(&k); v != "" {
			parts = append(parts, kn.name+"="+v)
		}
	}
	if k.RetryScale != 0 {
		parts = append(parts, "retry_scale="+strconv.FormatFloat(k.RetryScale, 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

// A knob is one name of HERALD_TEST_KNOBS: its bounds (the shortest a test may ask for,
// and the production value it may not exceed) and where it goes.
type knob struct {
	name     string
	min, max time.Duration
	set      func(*TestKnobs, time.Duration)
	get      func(*TestKnobs) string
}

// knobs are the durations; retry_scale, a factor, is read apart.
var knobs = []knob{
	{"lease", time.Second, 15 * time.Second,
		func(k *TestKnobs, d time.Duration) { k.Lease = d }, func(k *TestKnobs) string { return durationOrEmpty(k.Lease) }},
	{"step_wait", time.Second, 30 * time.Second,
		func(k *TestKnobs, d time.Duration) { k.StepWait = d }, func(k *TestKnobs) string { return durationOrEmpty(k.StepWait) }},
	{"sweep_every", time.Second, time.Minute,
		func(k *TestKnobs, d time.Duration) { k.SweepEvery = d }, func(k *TestKnobs) string { return durationOrEmpty(k.SweepEvery) }},
	{"sweep_grace", 0, 30 * time.Second,
		func(k *TestKnobs, d time.Duration) { k.SweepGrace, k.SweepGraceSet = d, true },
		func(k *TestKnobs) string {
			if !k.SweepGraceSet {
				return ""
			}
			return k.SweepGrace.String()
		}},
	{"idle_after", time.Second, time.Minute,
		func(k *TestKnobs, d time.Duration) { k.IdleAfter = d }, func(k *TestKnobs) string { return durationOrEmpty(k.IdleAfter) }},
	{"idle_check", 10 * time.Millisecond, time.Second,
		func(k *TestKnobs, d time.Duration) { k.IdleCheck = d }, func(k *TestKnobs) string { return durationOrEmpty(k.IdleCheck) }},
}

func durationOrEmpty(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// testKnobs reads HERALD_TEST_KNOBS: comma-separated name=value pairs, each knob at most
// once, none outside its bounds.
func testKnobs(v string) (TestKnobs, error) {
	var k TestKnobs
	seen := map[string]bool{}
	for pair := range strings.SplitSeq(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || value == "" {
			return k, knobError("%q is not name=value", pair)
		}
		if seen[name] {
			return k, knobError("%s is given twice", name)
		}
		seen[name] = true
		if name == "retry_scale" {
			f, err := strconv.ParseFloat(value, 64)
			if err != nil || f < 0.01 || f > 1 {
				return k, knobError("retry_scale must be a number from 0.01 to 1, got %q", value)
			}
			k.RetryScale = f
			continue
		}
		i := slices.IndexFunc(knobs, func(kn knob) bool { return kn.name == name })
		if i < 0 {
			return k, knobError("unknown knob %q (known: %s)", name, knobNames())
		}
		kn := knobs[i]
		d, err := time.ParseDuration(value)
		if err != nil {
			return k, knobError("%s: %q is not a duration (e.g. 2s)", name, value)
		}
		if d < kn.min || d > kn.max {
			return k, knobError("%s must be from %s to %s (the production value), got %s", name, kn.min, kn.max, d)
		}
		kn.set(&k, d)
	}
	return k, nil
}

func knobError(format string, args ...any) error {
	return &Error{"HERALD_TEST_KNOBS", fmt.Sprintf(format, args...)}
}

func knobNames() string {
	names := []string{"retry_scale"}
	for _, kn := range knobs {
		names = append(names, kn.name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
