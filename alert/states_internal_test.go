package alert

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The alert lifecycle (alerts.go): open → acknowledged → resolved, open →
// resolved, open → exhausted; its compare-and-set lists follow from it.
func TestAlertStates(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want []string
	}{
		{"moves", alertTable.Moves(AlertStates), []string{
			"open → acknowledged", "open → resolved", "open → exhausted", "acknowledged → resolved"}},
		{"acknowledgeable", AlertAcknowledgeable, []string{AlertOpen}},
		{"resolvable", AlertResolvable, []string{AlertOpen, AlertAcknowledged}},
		{"escalating", AlertEscalating, []string{AlertOpen}},
	} {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	for _, tt := range []struct {
		state                            string
		canAck, canResolve, isEscalating bool
	}{
		{AlertOpen, true, true, true},
		{AlertAcknowledged, false, true, false},
		{AlertResolved, false, false, false},
		{AlertExhausted, false, false, false},
	} {
		a := &Alert{State: tt.state}
		if got := [3]bool{a.CanMoveTo(AlertAcknowledged), a.CanMoveTo(AlertResolved), a.Escalating()}; got != [3]bool{tt.canAck, tt.canResolve, tt.isEscalating} {
			t.Errorf("%s: may acknowledge, may resolve, escalating = %v, want %v", tt.state, got, [3]bool{tt.canAck, tt.canResolve, tt.isEscalating})
		}
	}
}
