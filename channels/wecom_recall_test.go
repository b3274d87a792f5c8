package channels

import (
	"context"
	"errors"
	"testing"
	"time"

	"herald/simulator"
)

// A recall names the msgid the send answered with: the simulator's delivery shows it
// recalled. A second recall, an unknown msgid and one past the 24-hour window are
// refused permanently; a bad secret is an auth failure.
func TestWeComRecall(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	rig := startSim(t, simulator.Options{Now: clock.Now})
	w, err := NewWeCom(wecomConfig(rig), true)
	if err != nil {
		t.Fatal(err)
	}
	var _ Recaller = w
	ctx := context.Background()
	send := func() (Message, Receipt) {
		t.Helper()
		m := newMessage("zhangsan")
		r, err := w.Send(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return m, r
	}
	m, receipt := send()
	other, _ := send()
	if err := w.Recall(ctx, m, receipt); err != nil {
		t.Fatalf("recall: %v", err)
	}
	for _, d := range rig.sim.Deliveries() {
		if want := d.RequestID == m.ID; d.Recalled != want {
			t.Errorf("delivery %s recalled = %v, want %v", d.RequestID, d.Recalled, want)
		}
	}
	wantClass := func(name string, err error, class Class, code string) {
		t.Helper()
		var ce *Error
		if !errors.As(err, &ce) || ce.Class != class || (code != "" && ce.Code != code) {
			t.Errorf("%s: error %v, want class %s code %s", name, err, class, code)
		}
	}
	wantClass("second recall", w.Recall(ctx, m, receipt), Permanent, "301084")
	wantClass("unknown msgid", w.Recall(ctx, other, Receipt{ProviderMessageID: "nope"}), Permanent, "40035")
	wantClass("no msgid", w.Recall(ctx, other, Receipt{}), Permanent, "")

	late, lateReceipt := send()
	clock.Advance(24*time.Hour + time.Minute)
	wantClass("after 24 hours", w.Recall(ctx, late, lateReceipt), Permanent, "301085")

	fresh, freshReceipt := send()
	rig.sim.SetFaults(simulator.Faults{AuthFail: true})
	wantClass("auth fail", w.Recall(ctx, fresh, freshReceipt), Auth, "")
}
