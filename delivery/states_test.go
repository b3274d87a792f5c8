package delivery

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The compare-and-set lists follow from the moves allowed (DESIGN.md, "Message states").
func TestStateLists(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want []Status
	}{
		{"claimable", Claimable, []Status{Pending, Failed}},
		{"waiting", Waiting, []Status{Pending, Failed}},
		{"cancellable", Cancellable, []Status{Pending, Held, Failed}},
		{"holdable", Holdable, []Status{Pending, Failed}},
		{"to failed", From(Failed), []Status{Sending}},
		{"to sent", From(Sent), []Status{Sending}},
		{"to pending", From(Pending), []Status{Held, Sending, Stopped}},
		{"recallable", Recallable, []Status{Sent}},
		{"digestible", Digestible, []Status{Pending}},
	} {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	for _, s := range Statuses {
		// A stopped message may be sent again, a sent one recalled; nothing else moves.
		if s.Terminal() && s != Stopped && s != Sent && len(transitions[s]) > 0 {
			t.Errorf("terminal state %s has moves %v", s, transitions[s])
		}
	}
	if !Digested.Terminal() || Allowed(Digested, Pending) || Allowed(Failed, Digested) {
		t.Error("a digested notice is final, and only a pending one is folded")
	}
	if Allowed(Sent, Pending) || Allowed(Cancelled, Pending) || !Allowed(Stopped, Pending) {
		t.Error("only a stopped message may be sent again")
	}
}
