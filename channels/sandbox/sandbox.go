// Package sandbox is the sender behind the sandbox platform: Herald's in-process
// simulator, which behaves like a real platform (faults included) without leaving the
// process. The channels registry is given one; channels itself knows no simulator.
package sandbox

import (
	"context"
	"errors"
	"fmt"

	"herald/channels"
	"herald/simulator"
)

// Sender delivers to the simulator and answers the connection test.
type Sender struct {
	sim *simulator.Simulator
}

// New returns the sandbox sender over sim.
func New(sim *simulator.Simulator) *Sender { return &Sender{sim: sim} }

// Send implements channels.Sender: the simulator's faults come back classified as the
// adapters classify the same answers from a real platform.
func (s *Sender) Send(ctx context.Context, m channels.Message) (channels.Receipt, error) {
	id, err := s.sim.Accept(ctx, "sandbox", m.To, m.Title, m.Content, m.ID)
	if err == nil {
		return channels.Receipt{ProviderMessageID: id}, nil
	}
	f, ok := errors.AsType[*simulator.Fault](err)
	if !ok {
		return channels.Receipt{}, channels.Classify(err)
	}
	e := &channels.Error{Code: string(f.Kind), Err: err, RetryAfter: f.RetryAfter}
	switch f.Kind {
	case simulator.FaultThrottle:
		e.Class = channels.RateLimited
	case simulator.FaultReject:
		e.Class = channels.Permanent
	case simulator.FaultAuth:
		e.Class = channels.Auth
	default: // fail, timeout
		e.Class = channels.Transient
	}
	return channels.Receipt{}, e
}

// Probe implements channels.Prober: the simulator runs in this process, so there is
// nothing to reach; the test says which faults are set.
func (s *Sender) Probe(context.Context) channels.ProbeResult {
	res := channels.ProbeResult{OK: true, Summary: channels.Note{Key: "channels.probe.sandbox_ok"},
		Steps: []channels.ProbeStep{{Action: channels.Note{Key: "channels.probe.sandbox_local"}}}}
	if f := s.sim.Faults(); f != (simulator.Faults{}) {
		res.Steps = append(res.Steps, channels.ProbeStep{Action: channels.Note{Key: "channels.probe.sandbox_faults", Args: []any{"Faults", fmt.Sprintf("%+v", f)}}})
	}
	return res
}
