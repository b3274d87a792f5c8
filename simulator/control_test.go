package simulator

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDeliveriesAndStatsEndpoints(t *testing.T) {
	t.Parallel()
	sim, srv := newTestServer(t, Faults{}, Options{})

	if resp := mustDo(t, "GET", srv.URL+"/_sim/deliveries", nil, nil); strings.TrimSpace(string(resp.body)) != "[]" {
		t.Errorf("empty deliveries = %s, want []", resp.body)
	}

	bearer := http.Header{"Authorization": {"Bearer x"}}
	mustDo(t, "POST", srv.URL+"/tianyuan/messages", bearer, map[string]string{"to": "E1", "request_id": "r-1", "content": "one"})
	sim.SetFaults(Faults{RejectRate: 1})
	mustDo(t, "POST", srv.URL+"/tianyuan/messages", bearer, map[string]string{"to": "E2", "request_id": "r-2", "content": "two"})
	sim.SetFaults(Faults{})
	if _, err := sim.Accept(context.Background(), "", "E3", "", "three", "r-3"); err != nil {
		t.Fatal(err)
	}

	resp := mustDo(t, "GET", srv.URL+"/_sim/deliveries", nil, nil)
	at := testStart.UnixMilli()
	want := []Delivery{
		{Platform: "tianyuan", To: "E1", RequestID: "r-1", Content: "one", ReceivedAtMs: at},
		{Platform: "sandbox", To: "E3", RequestID: "r-3", Content: "three", ReceivedAtMs: at},
	}
	if diff := cmp.Diff(want, decode[[]Delivery](t, resp.body)); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}

	resp = mustDo(t, "GET", srv.URL+"/_sim/stats", nil, nil)
	wantStats := `{"requests":3,"accepted":2,"by_platform":{"sandbox":1,"tianyuan":1},` +
		`"faults":{"fail":0,"timeout":0,"throttle":0,"reject":1,"accept_then_timeout":0,"auth":0},` +
		`"dropped_silently":{"dingtalk":0,"feishu":0,"wecom":0}}`
	if diff := cmp.Diff(wantStats, strings.TrimSpace(string(resp.body))); diff != "" {
		t.Errorf("stats JSON (-want +got):\n%s", diff)
	}

	if resp := mustDo(t, "DELETE", srv.URL+"/_sim/deliveries", nil, nil); resp.status != http.StatusNoContent {
		t.Errorf("DELETE status = %d, want 204", resp.status)
	}
	if got := sim.Deliveries(); len(got) != 0 {
		t.Errorf("after reset, deliveries = %v", got)
	}
	if diff := cmp.Diff(newStats(), sim.Stats()); diff != "" {
		t.Errorf("after reset, stats (-want +got):\n%s", diff)
	}
	if got := sim.Faults(); got != (Faults{}) {
		t.Errorf("reset changed faults to %+v", got)
	}

	if resp := mustDo(t, "GET", srv.URL+"/healthz", nil, nil); resp.status != 200 || string(resp.body) != "ok" {
		t.Errorf("healthz = %d %q", resp.status, resp.body)
	}
}

// POST /_sim/faults changes only the fields present and refuses invalid settings,
// leaving the current ones in place.
func TestFaultsEndpoint(t *testing.T) {
	t.Parallel()
	_, srv := newTestServer(t, Faults{Latency: Duration(5 * time.Millisecond), FailRate: 0.1}, Options{})
	steps := []struct {
		body       string
		wantStatus int
		wantFaults Faults // the settings after the step
		wantError  string // substring of the error, for refused steps
	}{
		{`{"throttle_rate":0.25}`, 200, Faults{Latency: Duration(5 * time.Millisecond), FailRate: 0.1, ThrottleRate: 0.25}, ""},
		{`{"latency":"20ms","auth_fail":true}`, 200, Faults{Latency: Duration(20 * time.Millisecond), FailRate: 0.1, ThrottleRate: 0.25, AuthFail: true}, ""},
		{`{"latency":1000000,"auth_fail":false,"fail_rate":0}`, 200, Faults{Latency: Duration(time.Millisecond), ThrottleRate: 0.25}, ""},
		{`{}`, 200, Faults{Latency: Duration(time.Millisecond), ThrottleRate: 0.25}, ""},
		{`{"reject_rate":1.5}`, 400, Faults{Latency: Duration(time.Millisecond), ThrottleRate: 0.25}, "reject_rate must be between 0 and 1"},
		{`{"timeout_rate":-0.1}`, 400, Faults{Latency: Duration(time.Millisecond), ThrottleRate: 0.25}, "timeout_rate must be between 0 and 1"},
		{`{"accept_then_timeout_rate":0.8}`, 400, Faults{Latency: Duration(time.Millisecond), ThrottleRate: 0.25}, "add up to 1.05"},
		{`{"latency":"-1s"}`, 400, Faults{Latency: Duration(time.Millisecond), ThrottleRate: 0.25}, "latency must not be negative"},
		{`{"latency":"soon"}`, 400, Faults{Latency: Duration(time.Millisecond), ThrottleRate: 0.25}, `duration "soon"`},
		{`{"failrate":0.5}`, 400, Faults{Latency: Duration(time.Millisecond), ThrottleRate: 0.25}, `unknown field "failrate"`},
		{`{"fail_rate":"0.5"}`, 400, Faults{Latency: Duration(time.Millisecond), ThrottleRate: 0.25}, "fail_rate"},
		{`{"fail_rate":0.5} {}`, 400, Faults{Latency: Duration(time.Millisecond), ThrottleRate: 0.25}, "single JSON object"},
	}
	for _, step := range steps {
		resp := mustDo(t, "POST", srv.URL+"/_sim/faults", nil, []byte(step.body))
		if resp.status != step.wantStatus {
			t.Errorf("POST %s: status %d, want %d (body %s)", step.body, resp.status, step.wantStatus, resp.body)
		}
		if step.wantError != "" {
			if got := decode[controlError](t, resp.body).Error; !strings.Contains(got, step.wantError) {
				t.Errorf("POST %s: error %q, want it to mention %q", step.body, got, step.wantError)
			}
		} else if diff := cmp.Diff(step.wantFaults, decode[Faults](t, resp.body)); diff != "" {
			t.Errorf("POST %s: answer (-want +got):\n%s", step.body, diff)
		}
		got := decode[Faults](t, mustDo(t, "GET", srv.URL+"/_sim/faults", nil, nil).body)
		if diff := cmp.Diff(step.wantFaults, got); diff != "" {
			t.Errorf("after POST %s: GET /_sim/faults (-want +got):\n%s", step.body, diff)
		}
	}
}
