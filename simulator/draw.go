package simulator

import (
	"context"
	"time"
)

// outcome is what the simulator does with one request.
type outcome int

const (
	outcomeAccept outcome = iota
	outcomeAuth
	outcomeFail
	outcomeTimeout
	outcomeThrottle
	outcomeReject
	outcomeAcceptThenTimeout
)

// verdict is the result of one fault draw, taken together with the fault settings it was
// drawn against so a concurrent SetFaults cannot mix two settings in one request.
type verdict struct {
	outcome outcome
	latency time.Duration
	// throttleAs429 picks which of its two rate-limit answers the generic contract gives,
	// so senders are exercised on both forms.
	throttleAs429 bool
}

// pick maps one uniform draw u in [0, 1) to an outcome: auth failure first, then the
// rates in their fixed order as cumulative bands. Inside the throttle band, the upper
// half selects the HTTP 429 form.
func pick(f Faults, u float64) (outcome, bool) {
	if f.AuthFail {
		return outcomeAuth, false
	}
	upper := 0.0
	for _, r := range f.rates() {
		lower := upper
		upper += r.rate
		if u < upper {
			return r.outcome, r.outcome == outcomeThrottle && u >= lower+r.rate/2
		}
	}
	return outcomeAccept, false
}

// decide draws the outcome of one request and counts it.
func (s *Simulator) decide() verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := verdict{latency: time.Duration(s.faults.Latency)}
	v.outcome, v.throttleAs429 = pick(s.faults, s.rng.Float64())
	s.stats.Requests++
	s.countFault(v.outcome)
	return v
}

// countFault adds an injected fault to the statistics; s.mu must be held.
func (s *Simulator) countFault(o outcome) {
	switch o {
	case outcomeAuth:
		s.stats.Faults.Auth++
	case outcomeFail:
		s.stats.Faults.Fail++
	case outcomeTimeout:
		s.stats.Faults.Timeout++
	case outcomeThrottle:
		s.stats.Faults.Throttle++
	case outcomeReject:
		s.stats.Faults.Reject++
	case outcomeAcceptThenTimeout:
		s.stats.Faults.AcceptThenTimeout++
	}
}

// maxHold caps how long a timeout fault keeps a caller waiting, so a client without a
// deadline of its own cannot pin a goroutine forever.
const maxHold = 5 * time.Minute

// hold blocks for a timeout fault: until the caller gives up, the simulator shuts down,
// or maxHold passes.
func (s *Simulator) hold(ctx context.Context) {
	timer := time.NewTimer(maxHold)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-s.released:
	case <-timer.C:
	}
}

// sleep waits out the injected latency; it reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// countAuthFailure counts a refused SMTP AUTH as a request failing authentication.
func (s *Simulator) countAuthFailure() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Requests++
	s.stats.Faults.Auth++
}
