package channels

import (
	"context"
	"errors"

	"herald/simulator"
)

// Sandbox delivers to Herald's in-process simulator: the demo platform, which behaves
// like a real one (faults included) without leaving the process.
type Sandbox struct {
	Sim *simulator.Simulator
}

// Send implements Sender.
func (s *Sandbox) Send(ctx context.Context, m Message) (Receipt, error) {
	id, err := s.Sim.Accept(ctx, "sandbox", m.To, m.Title, m.Content, m.ID)
	if err == nil {
		return Receipt{ProviderMessageID: id}, nil
	}
	var f *simulator.Fault
	if !errors.As(err, &f) {
		return Receipt{}, Classify(err)
	}
	e := &Error{Code: string(f.Kind), Err: err, RetryAfter: f.RetryAfter}
	switch f.Kind {
	case simulator.FaultThrottle:
		e.Class = RateLimited
	case simulator.FaultReject:
		e.Class = Permanent
	case simulator.FaultAuth:
		e.Class = Auth
	default: // fail, timeout
		e.Class = Transient
	}
	return Receipt{}, e
}
