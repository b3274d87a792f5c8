package simulator

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestGenericEndpoint(t *testing.T) {
	t.Parallel()
	bearer := http.Header{"Authorization": {"Bearer tok"}}
	valid := map[string]string{"to": "E1001", "msg_type": "text", "title": "T", "content": "hello", "request_id": "m-1"}
	recorded := []Delivery{{Platform: "zhaohu", To: "E1001", RequestID: "m-1", Content: "hello", ReceivedAtMs: testStart.UnixMilli()}}

	tests := []struct {
		name           string
		faults         Faults
		header         http.Header
		body           any
		wantStatus     int
		wantReply      genericReply
		wantRetryAfter string
		wantDeliveries []Delivery
		wantStats      Stats
	}{
		{
			name: "success", header: bearer, body: valid,
			wantStatus: 200, wantReply: genericReply{Code: 0, Message: "ok"},
			wantDeliveries: recorded,
			wantStats:      Stats{Requests: 1, Accepted: 1, ByPlatform: map[string]int64{"zhaohu": 1}},
		},
		{
			name: "bearer scheme is case-insensitive", header: http.Header{"Authorization": {"bearer tok"}}, body: valid,
			wantStatus: 200, wantReply: genericReply{Code: 0, Message: "ok"},
			wantDeliveries: recorded,
			wantStats:      Stats{Requests: 1, Accepted: 1, ByPlatform: map[string]int64{"zhaohu": 1}},
		},
		{
			name: "missing token", body: valid,
			wantStatus: 401, wantReply: genericReply{Code: 40101, Message: "invalid token"},
			wantStats: Stats{ByPlatform: map[string]int64{}},
		},
		{
			name: "empty bearer token", header: http.Header{"Authorization": {"Bearer  "}}, body: valid,
			wantStatus: 401, wantReply: genericReply{Code: 40101, Message: "invalid token"},
			wantStats: Stats{ByPlatform: map[string]int64{}},
		},
		{
			name: "basic scheme", header: http.Header{"Authorization": {"Basic dTpw"}}, body: valid,
			wantStatus: 401, wantReply: genericReply{Code: 40101, Message: "invalid token"},
			wantStats: Stats{ByPlatform: map[string]int64{}},
		},
		{
			name: "bad JSON", header: bearer, body: []byte(`{"to":`),
			wantStatus: 400, wantReply: genericReply{Code: 40001},
			wantStats: Stats{ByPlatform: map[string]int64{}},
		},
		{
			name: "missing request_id", header: bearer, body: map[string]string{"to": "E1001", "content": "x"},
			wantStatus: 400, wantReply: genericReply{Code: 40001, Message: "to and request_id are required"},
			wantStats: Stats{ByPlatform: map[string]int64{}},
		},
		{
			name: "missing to", header: bearer, body: map[string]string{"request_id": "m-1", "content": "x"},
			wantStatus: 400, wantReply: genericReply{Code: 40001, Message: "to and request_id are required"},
			wantStats: Stats{ByPlatform: map[string]int64{}},
		},
		{
			name: "fail fault", faults: Faults{FailRate: 1}, header: bearer, body: valid,
			wantStatus: 500, wantReply: genericReply{Code: 50000, Message: "internal error"},
			wantStats: Stats{Requests: 1, ByPlatform: map[string]int64{}, Faults: FaultCounts{Fail: 1}},
		},
		{
			name: "reject fault", faults: Faults{RejectRate: 1}, header: bearer, body: valid,
			wantStatus: 200, wantReply: genericReply{Code: 40002, Message: "invalid recipient"},
			wantStats: Stats{Requests: 1, ByPlatform: map[string]int64{}, Faults: FaultCounts{Reject: 1}},
		},
		{
			name: "auth fault", faults: Faults{AuthFail: true}, header: bearer, body: valid,
			wantStatus: 200, wantReply: genericReply{Code: 40101, Message: "invalid token"},
			wantStats: Stats{Requests: 1, ByPlatform: map[string]int64{}, Faults: FaultCounts{Auth: 1}},
		},
		{
			name: "auth fault wins over other rates", faults: Faults{AuthFail: true, FailRate: 1}, header: bearer, body: valid,
			wantStatus: 200, wantReply: genericReply{Code: 40101, Message: "invalid token"},
			wantStats: Stats{Requests: 1, ByPlatform: map[string]int64{}, Faults: FaultCounts{Auth: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim, srv := newTestServer(t, tt.faults, Options{})
			resp := mustDo(t, "POST", srv.URL+"/zhaohu/messages", tt.header, tt.body)
			if resp.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %s)", resp.status, tt.wantStatus, resp.body)
			}
			reply := decode[genericReply](t, resp.body)
			if reply.Code == 0 && reply.MsgID == "" {
				t.Error("success reply has no msg_id")
			}
			reply.MsgID = ""
			if tt.wantReply.Message == "" { // messages that quote a parser error vary
				reply.Message = ""
			}
			if diff := cmp.Diff(tt.wantReply, reply); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDeliveries, sim.Deliveries(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("deliveries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStats, sim.Stats(), cmpopts.IgnoreFields(Stats{}, "DroppedSilently")); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGenericEndpointsArePerPlatform(t *testing.T) {
	t.Parallel()
	sim, srv := newTestServer(t, Faults{}, Options{})
	bearer := http.Header{"Authorization": {"Bearer tok"}}
	for _, platform := range []string{"tianyuan", "zhaohu", "tianyuan"} {
		resp := mustDo(t, "POST", srv.URL+"/"+platform+"/messages", bearer,
			map[string]string{"to": "E1", "request_id": "r-" + platform, "content": platform})
		if resp.status != 200 {
			t.Fatalf("%s: status %d", platform, resp.status)
		}
	}
	want := map[string]int64{"tianyuan": 2, "zhaohu": 1}
	if diff := cmp.Diff(want, sim.Stats().ByPlatform); diff != "" {
		t.Errorf("by_platform (-want +got):\n%s", diff)
	}
	if resp := mustDo(t, "GET", srv.URL+"/tianyuan/messages", bearer, nil); resp.status != http.StatusMethodNotAllowed {
		t.Errorf("GET status = %d, want 405", resp.status)
	}
}

// Throttling has two answers, HTTP 200 with code 42901 and HTTP 429 with code 42900,
// both with Retry-After: 1; a sender must meet both.
func TestGenericThrottleHasBothForms(t *testing.T) {
	t.Parallel()
	_, srv := newTestServer(t, Faults{ThrottleRate: 1}, Options{Seed: 7})
	type form struct {
		Status     int
		Code       int
		RetryAfter string
	}
	seen := map[form]int{}
	for range 40 {
		resp := mustDo(t, "POST", srv.URL+"/tianyuan/messages", http.Header{"Authorization": {"Bearer x"}},
			map[string]string{"to": "E1", "request_id": "r"})
		seen[form{resp.status, decode[genericReply](t, resp.body).Code, resp.retryAfter}]++
	}
	var got []form
	for f := range seen {
		got = append(got, f)
	}
	want := []form{{200, 42901, "1"}, {429, 42900, "1"}}
	byStatus := cmpopts.SortSlices(func(a, b form) bool { return a.Status < b.Status })
	if diff := cmp.Diff(want, got, byStatus); diff != "" {
		t.Errorf("throttle forms (-want +got):\n%s", diff)
	}
}
