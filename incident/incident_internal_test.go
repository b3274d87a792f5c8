package incident

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The incident lifecycle (incident.go): open → acknowledged → resolved, open →
// resolved; its compare-and-set lists follow from it.
func TestIncidentStates(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want []string
	}{
		{"moves", table.Moves(States), []string{"open → acknowledged", "open → resolved", "acknowledged → resolved"}},
		{"acknowledgeable", Acknowledgeable, []string{StateOpen}},
		{"resolvable", Resolvable, []string{StateOpen, StateAcknowledged}},
	} {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// A route's rules take their defaults when left out, and an alert's group key is the
// named labels' values in the order named, a missing label as empty.
func TestRulesDefaultsAndGroupKey(t *testing.T) {
	r := Rules{GroupBy: []string{" cluster", "alertname "}}
	if err := r.Check("routes[0]"); err != nil {
		t.Fatal(err)
	}
	got := []any{r.groupWindow(), r.flapWindow(), r.flapCount(),
		r.groupKey(map[string]string{"alertname": "NodeDown", "cluster": "sh-core", "instance": "i1"}),
		r.groupKey(map[string]string{"alertname": "NodeDown"})}
	want := []any{DefaultGroupWindow, DefaultFlapWindow, DefaultFlapCount, "cluster=sh-core,alertname=NodeDown", "cluster=,alertname=NodeDown"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	r = Rules{GroupBy: []string{"cluster"}, GroupWindow: "30s", FlapCount: 2, FlapWindow: "24h", MaxNoticesPerHour: 0}
	if err := r.Check("routes[0]"); err != nil {
		t.Errorf("the bounds themselves: %v", err)
	}
}
