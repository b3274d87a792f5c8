package simulator

import (
	"context"
	"time"
)

// throttleRetryAfter is the wait every rate-limit answer asks for.
const throttleRetryAfter = time.Second

// Accept is the in-process path used by the sandbox adapter: it applies the same fault
// draw and recording as the HTTP endpoints. platform names the recorded delivery
// ("sandbox" when empty); title is accepted for symmetry with the other platforms but not
// recorded, as Delivery has no field for it.
//
// On success it returns a provider message id. On an injected fault it returns *Fault.
// A timeout or accept-then-timeout fault blocks until ctx is done (at most five minutes)
// and then returns a FaultTimeout; accept-then-timeout records the delivery first. An
// empty recipient is a FaultReject, as a platform would refuse it. If ctx ends during the
// injected latency, Accept returns ctx.Err().
func (s *Simulator) Accept(ctx context.Context, platform, to, title, content, requestID string) (msgID string, err error) {
	if platform == "" {
		platform = "sandbox"
	}
	if to == "" {
		return "", &Fault{Kind: FaultReject}
	}
	received := s.now()
	v := s.decide()
	if !sleep(ctx, v.latency) {
		return "", ctx.Err()
	}
	delivery := Delivery{
		Platform:     platform,
		To:           to,
		RequestID:    requestID,
		Content:      content,
		ReceivedAtMs: received.UnixMilli(),
	}
	switch v.outcome {
	case outcomeAuth:
		return "", &Fault{Kind: FaultAuth}
	case outcomeFail:
		return "", &Fault{Kind: FaultFail}
	case outcomeThrottle:
		return "", &Fault{Kind: FaultThrottle, RetryAfter: throttleRetryAfter}
	case outcomeReject:
		return "", &Fault{Kind: FaultReject}
	case outcomeTimeout:
		s.hold(ctx)
		return "", &Fault{Kind: FaultTimeout}
	case outcomeAcceptThenTimeout:
		s.record(delivery)
		s.hold(ctx)
		return "", &Fault{Kind: FaultTimeout}
	}
	s.record(delivery)
	return s.newMsgID(), nil
}
