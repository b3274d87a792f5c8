package channels

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/simulator"
)

// simRig is a simulator serving HTTP and SMTP on loopback, with a count of requests
// by path.
type simRig struct {
	sim      *simulator.Simulator
	url      string // the HTTP server's base URL
	smtpHost string
	smtpPort string

	mu   sync.Mutex
	hits map[string]int
}

// startSim starts a simulator for one test; it stops when the test ends.
func startSim(t *testing.T, opts simulator.Options) *simRig {
	t.Helper()
	if opts.Seed == 0 {
		opts.Seed = 7 // reproducible fault draws
	}
	rig := &simRig{sim: simulator.NewWithOptions(simulator.Faults{}, opts), hits: map[string]int{}}
	handler := rig.sim.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rig.mu.Lock()
		rig.hits[r.URL.Path]++
		rig.mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rig.url = srv.URL

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rig.sim.ServeSMTP(ln) }()
	t.Cleanup(func() {
		ln.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeSMTP: %v", err)
		}
	})
	rig.smtpHost, rig.smtpPort, _ = net.SplitHostPort(ln.Addr().String())
	return rig
}

// hitCount returns how many HTTP requests reached path.
func (r *simRig) hitCount(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hits[path]
}

// faultCase is one injected fault and what an adapter must make of it.
type faultCase struct {
	name   string
	faults simulator.Faults
	want   Class // "" means success
	// recorded says the simulator keeps the delivery: on success, and in the ambiguous
	// accept-then-timeout case.
	recorded bool
	// timeout marks faults that never answer: the call runs with a short deadline.
	timeout bool
}

// faultCases are the faults every adapter is tested against.
var faultCases = []faultCase{
	{name: "none", want: "", recorded: true},
	{name: "fail", faults: simulator.Faults{FailRate: 1}, want: Transient},
	{name: "timeout", faults: simulator.Faults{TimeoutRate: 1}, want: Transient, timeout: true},
	{name: "throttle", faults: simulator.Faults{ThrottleRate: 1}, want: RateLimited},
	{name: "reject", faults: simulator.Faults{RejectRate: 1}, want: Permanent},
	{name: "auth", faults: simulator.Faults{AuthFail: true}, want: Auth},
	{name: "accept_then_timeout", faults: simulator.Faults{AcceptThenTimeoutRate: 1}, want: Transient, recorded: true, timeout: true},
}

// shortDeadline is the call deadline for faults that never answer.
const shortDeadline = 300 * time.Millisecond

// adapterCase describes how one adapter's sends look at the simulator.
type adapterCase struct {
	platform string // as recorded in deliveries
	sender   Sender
	to       string
	// retryAfter says a throttle answer carries a wait the adapter must report.
	retryAfter bool
	// providerID says a success carries a provider message id.
	providerID bool
}

var msgSeq atomic.Int64

// newMessage returns a message with a fresh id.
func newMessage(to string) Message {
	n := msgSeq.Add(1)
	return Message{ID: fmt.Sprintf("msg-%04d", n), To: to, MsgType: "text",
		Content: fmt.Sprintf("Overdue: reconcile ledger %d — 请处理", n)}
}

// runFaultTable sends one message per fault case and checks the error class and what
// the simulator recorded.
func runFaultTable(t *testing.T, rig *simRig, ac adapterCase) {
	t.Helper()
	for _, fc := range faultCases {
		t.Run(fc.name, func(t *testing.T) {
			rig.sim.SetFaults(fc.faults)
			rig.sim.Reset()
			t.Cleanup(func() { rig.sim.SetFaults(simulator.Faults{}) })
			deadline := 5 * time.Second
			if fc.timeout {
				deadline = shortDeadline
			}
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			m := newMessage(ac.to)
			receipt, err := ac.sender.Send(ctx, m)

			if fc.want == "" {
				if err != nil {
					t.Fatalf("Send: %v, want success", err)
				}
				if ac.providerID && receipt.ProviderMessageID == "" {
					t.Errorf("receipt %+v has no provider message id", receipt)
				}
			} else {
				ce, ok := errors.AsType[*Error](err)
				if !ok {
					t.Fatalf("Send: %v (%T), want a *Error of class %s", err, err, fc.want)
				}
				if ce.Class != fc.want {
					t.Errorf("class = %s, want %s (error: %v)", ce.Class, fc.want, ce)
				}
				if !strings.Contains(ce.Error(), "channels: "+ac.platform) && ac.platform != "sandbox" {
					t.Errorf("error %q does not name the adapter", ce)
				}
				if fc.want == RateLimited && ac.retryAfter && ce.RetryAfter <= 0 {
					t.Errorf("RetryAfter = %s, want the simulator's Retry-After", ce.RetryAfter)
				}
			}

			got := rig.sim.Deliveries()
			if !fc.recorded {
				if len(got) != 0 {
					t.Errorf("deliveries = %+v, want none", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("deliveries = %+v, want exactly one", got)
			}
			want := simulator.Delivery{Platform: ac.platform, To: ac.to, RequestID: m.ID, Content: m.Content}
			d := got[0]
			// The provider message id is the platform's to choose (a recall names it).
			d.ReceivedAtMs, d.ProviderMsgID = 0, ""
			if diff := cmp.Diff(want, d); diff != "" {
				t.Errorf("delivery (-want +got):\n%s", diff)
			}
		})
	}
}

// classOf returns err's class, failing the test if err is not a *Error.
func classOf(t *testing.T, err error) Class {
	t.Helper()
	ce, ok := errors.AsType[*Error](err)
	if !ok {
		t.Fatalf("error %v (%T) is not a *channels.Error", err, err)
	}
	return ce.Class
}
