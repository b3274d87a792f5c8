package simulator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestAccept(t *testing.T) {
	t.Parallel()
	delivered := []Delivery{{Platform: "sandbox", To: "E1", RequestID: "m-1", Content: "hello", ReceivedAtMs: testStart.UnixMilli()}}
	tests := []struct {
		name           string
		faults         Faults
		platform, to   string
		wantFault      *Fault // nil for success
		wantDeliveries []Delivery
		wantStats      FaultCounts
	}{
		{name: "success", to: "E1", wantDeliveries: delivered},
		{name: "platform named by caller", platform: "demo", to: "E1",
			wantDeliveries: []Delivery{{Platform: "demo", To: "E1", RequestID: "m-1", Content: "hello", ReceivedAtMs: testStart.UnixMilli()}}},
		{name: "empty recipient", to: "", wantFault: &Fault{Kind: FaultReject}},
		{name: "fail", faults: Faults{FailRate: 1}, to: "E1", wantFault: &Fault{Kind: FaultFail}, wantStats: FaultCounts{Fail: 1}},
		{name: "throttle", faults: Faults{ThrottleRate: 1}, to: "E1", wantFault: &Fault{Kind: FaultThrottle, RetryAfter: time.Second}, wantStats: FaultCounts{Throttle: 1}},
		{name: "reject", faults: Faults{RejectRate: 1}, to: "E1", wantFault: &Fault{Kind: FaultReject}, wantStats: FaultCounts{Reject: 1}},
		{name: "auth", faults: Faults{AuthFail: true}, to: "E1", wantFault: &Fault{Kind: FaultAuth}, wantStats: FaultCounts{Auth: 1}},
		{name: "timeout", faults: Faults{TimeoutRate: 1}, to: "E1", wantFault: &Fault{Kind: FaultTimeout}, wantStats: FaultCounts{Timeout: 1}},
		{name: "accept then timeout", faults: Faults{AcceptThenTimeoutRate: 1}, to: "E1",
			wantFault: &Fault{Kind: FaultTimeout}, wantDeliveries: delivered, wantStats: FaultCounts{AcceptThenTimeout: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim := NewWithOptions(tt.faults, Options{Now: newFakeClock().Now})
			ctx, cancel := context.WithTimeout(context.Background(), shortTimeout)
			defer cancel()
			start := time.Now()
			id, err := sim.Accept(ctx, tt.platform, tt.to, "title", "hello", "m-1")

			var fault *Fault
			if errors.As(err, &fault) != (tt.wantFault != nil) {
				t.Fatalf("Accept error = %v, want fault %v", err, tt.wantFault)
			}
			if diff := cmp.Diff(tt.wantFault, fault); diff != "" {
				t.Errorf("fault (-want +got):\n%s", diff)
			}
			if err == nil && !strings.HasPrefix(id, "sim-") {
				t.Errorf("message id = %q, want a sim- id", id)
			}
			if tt.wantFault != nil && tt.wantFault.Kind == FaultTimeout && time.Since(start) < shortTimeout {
				t.Errorf("timeout fault returned after %s, before ctx was done", time.Since(start))
			}
			if diff := cmp.Diff(tt.wantDeliveries, sim.Deliveries(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("deliveries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStats, sim.Stats().Faults); diff != "" {
				t.Errorf("fault counts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAcceptIDsAreUnique(t *testing.T) {
	t.Parallel()
	sim := New(Faults{})
	seen := map[string]bool{}
	for range 100 {
		id, err := sim.Accept(context.Background(), "sandbox", "E1", "", "c", "r")
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("message id %q given twice", id)
		}
		seen[id] = true
	}
}

// A caller that gives up during the injected latency gets its own context error, not
// an injected fault, and nothing is recorded.
func TestAcceptContextEndsDuringLatency(t *testing.T) {
	t.Parallel()
	sim := New(Faults{Latency: Duration(time.Minute)})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := sim.Accept(ctx, "", "E1", "", "c", "r")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Accept error = %v, want context.DeadlineExceeded", err)
	}
	if n := len(sim.Deliveries()); n != 0 {
		t.Errorf("recorded %d deliveries, want 0", n)
	}
}

func TestFaultError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fault *Fault
		want  string
	}{
		{&Fault{Kind: FaultReject}, "simulator: injected reject fault"},
		{&Fault{Kind: FaultThrottle, RetryAfter: time.Second}, "simulator: injected throttle fault (retry after 1s)"},
	}
	for _, tt := range tests {
		if got := tt.fault.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
