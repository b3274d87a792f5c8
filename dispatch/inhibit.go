package dispatch

import (
	"context"
	"time"

	"herald/inhibit"
)

// Inhibition is the inhibition rules' service on the dispatcher's store, starting a
// released alert's escalation through the alerts' service, on the dispatcher's one cache
// of compiled rules (so that a change through the console or the API reaches the
// integrations' intake at once). It is a function, not a method, so the dispatcher's own
// surface stays as it is.
func Inhibition(d *Dispatcher) *inhibit.Referee {
	d.inhibitRulesOnce.Do(func() { d.inhibitRules = inhibit.NewRuleCache() })
	return inhibit.NewService(d.store, d.alerts, d.clock, d.log, d.inhibitRules)
}

// RunInhibitPass releases, every interval until ctx ends, the alerts inhibited by
// sources that have ended: a recovery through an integration releases them at once, and
// this pass catches the sources resolved another way (the console, the API, an
// acknowledgment link) and any release a failure left undone. Each worker runs it;
// every move is a compare-and-set.
func RunInhibitPass(ctx context.Context, d *Dispatcher, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	svc := Inhibition(d)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := svc.Settle(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("dispatch: release inhibited alerts", "error", err)
		}
	}
}
