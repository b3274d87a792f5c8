package channels

import (
	"context"
	"errors"
	"testing"

	"herald/simulator"
)

// TestStartCheckRunsAtTheFirstByte: a call whose start check refuses it reaches the
// platform not at all and fails with ErrLateStart; a check that passes runs once per
// request, on a fresh connection and on a reused one; and a check that never ran does
// not stay behind on the connection for the next request without one.
func TestStartCheckRunsAtTheFirstByte(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	g := newGeneric("tianyuan", map[string]string{"base_url": rig.url + "/tianyuan", "token": "t"}, true)
	stale := errors.New("admission stale")
	refuse := WithStartCheck(context.Background(), func() error { return stale })
	_, err := g.Send(refuse, newMessage("S1"))
	if !errors.Is(err, ErrLateStart) || !errors.Is(err, stale) || classOf(t, err) != Transient {
		t.Fatalf("a refused start: %v, want a transient error wrapping ErrLateStart", err)
	}
	if n := len(rig.sim.Deliveries()); n != 0 {
		t.Fatalf("the platform received %d calls its start check refused", n)
	}

	runs := 0
	pass := WithStartCheck(context.Background(), func() error { runs++; return nil })
	for i, id := range []string{"S2", "S3"} { // the second goes on the first's connection
		if _, err := g.Send(pass, newMessage(id)); err != nil {
			t.Fatalf("send %s: %v", id, err)
		}
		if runs != i+1 {
			t.Fatalf("after %d sends the check ran %d times, want once each", i+1, runs)
		}
	}
	// A request without a check, on the pooled connection, goes as before.
	if _, err := g.Send(context.Background(), newMessage("S4")); err != nil {
		t.Fatalf("send without a check: %v", err)
	}
	if n := len(rig.sim.Deliveries()); n != 3 || runs != 2 {
		t.Errorf("deliveries %d (want 3), checks run %d (want 2)", n, runs)
	}
}
