package simulator

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// A timeout fault never answers and records nothing; accept-then-timeout records the
// delivery and then never answers. Both must look the same to the sender.
func TestHTTPTimeoutFaults(t *testing.T) {
	t.Parallel()
	type send struct {
		path   string
		header http.Header
		body   any
	}
	generic := func(*testing.T, string) send {
		return send{"/tianyuan/messages", http.Header{"Authorization": {"Bearer x"}},
			map[string]string{"to": "E1", "request_id": "r-1", "content": "c"}}
	}
	wecom := func(t *testing.T, url string) send {
		return send{"/wecom/cgi-bin/message/send?access_token=" + weComToken(t, url),
			http.Header{"X-Request-Id": {"r-1"}},
			map[string]any{"touser": "E1", "msgtype": "text", "agentid": 1, "text": map[string]string{"content": "c"}}}
	}
	webhook := func(*testing.T, string) send {
		return send{"/webhook/ops", nil, map[string]string{"to": "E1", "request_id": "r-1", "content": "c"}}
	}
	tests := []struct {
		name           string
		faults         Faults
		request        func(*testing.T, string) send
		wantDeliveries []Delivery
		wantStats      FaultCounts
	}{
		{"generic timeout", Faults{TimeoutRate: 1}, generic, nil, FaultCounts{Timeout: 1}},
		{"generic accept then timeout", Faults{AcceptThenTimeoutRate: 1}, generic,
			[]Delivery{{Platform: "tianyuan", To: "E1", RequestID: "r-1", Content: "c", ReceivedAtMs: testStart.UnixMilli()}},
			FaultCounts{AcceptThenTimeout: 1}},
		{"wecom timeout", Faults{TimeoutRate: 1}, wecom, nil, FaultCounts{Timeout: 1}},
		{"wecom accept then timeout", Faults{AcceptThenTimeoutRate: 1}, wecom,
			[]Delivery{{Platform: "wecom", To: "E1", RequestID: "r-1", Content: "c", ReceivedAtMs: testStart.UnixMilli()}},
			FaultCounts{AcceptThenTimeout: 1}},
		{"webhook timeout", Faults{TimeoutRate: 1}, webhook, nil, FaultCounts{Timeout: 1}},
		{"webhook accept then timeout", Faults{AcceptThenTimeoutRate: 1}, webhook,
			[]Delivery{{Platform: "webhook", To: "E1", RequestID: "r-1", Content: "c", ReceivedAtMs: testStart.UnixMilli()}},
			FaultCounts{AcceptThenTimeout: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim, srv := newTestServer(t, tt.faults, Options{})
			req := tt.request(t, srv.URL)
			start := time.Now()
			resp, err := do(t, &http.Client{Timeout: shortTimeout}, "POST", srv.URL+req.path, req.header, req.body)
			if !isTimeout(err) {
				t.Fatalf("got answer %+v, err %v; want a client timeout", resp, err)
			}
			if waited := time.Since(start); waited < shortTimeout {
				t.Errorf("gave up after %s, before the client timeout", waited)
			}
			if diff := cmp.Diff(tt.wantDeliveries, sim.Deliveries(), cmpopts.EquateEmpty(), ignoreMsgID); diff != "" {
				t.Errorf("deliveries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStats, sim.Stats().Faults); diff != "" {
				t.Errorf("fault counts (-want +got):\n%s", diff)
			}
		})
	}
}

// Latency delays the answer by at least the configured time.
func TestLatency(t *testing.T) {
	t.Parallel()
	const latency = 50 * time.Millisecond
	sim, srv := newTestServer(t, Faults{Latency: Duration(latency)}, Options{})
	start := time.Now()
	resp := mustDo(t, "POST", srv.URL+"/webhook/x", nil, map[string]string{"to": "E1", "request_id": "r"})
	if waited := time.Since(start); waited < latency {
		t.Errorf("HTTP answer after %s, want at least %s", waited, latency)
	}
	if resp.status != 200 {
		t.Errorf("status = %d, want 200", resp.status)
	}
	start = time.Now()
	if _, err := sim.Accept(context.Background(), "", "E1", "", "c", "r"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < latency {
		t.Errorf("Accept returned after %s, want at least %s", waited, latency)
	}
}
