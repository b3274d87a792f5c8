package simulator

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDurationJSON(t *testing.T) {
	t.Parallel()
	encoded, err := json.Marshal(Faults{Latency: Duration(5 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"latency":"5ms","fail_rate":0,"timeout_rate":0,"throttle_rate":0,"reject_rate":0,"accept_then_timeout_rate":0,"auth_fail":false}`
	if diff := cmp.Diff(want, string(encoded)); diff != "" {
		t.Errorf("Faults JSON (-want +got):\n%s", diff)
	}

	tests := []struct {
		in      string
		want    Duration
		wantErr bool
	}{
		{`"5ms"`, Duration(5 * time.Millisecond), false},
		{`"1m30s"`, Duration(90 * time.Second), false},
		{`"0s"`, 0, false},
		{`2500000`, Duration(2500 * time.Microsecond), false},
		{`null`, Duration(42), false}, // null leaves the value alone
		{`"5"`, 0, true},              // a bare number in a string has no unit
		{`1.5`, 0, true},
		{`true`, 0, true},
	}
	for _, tt := range tests {
		got := Duration(42)
		err := json.Unmarshal([]byte(tt.in), &got)
		if (err != nil) != tt.wantErr {
			t.Errorf("Unmarshal(%s) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("Unmarshal(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestFaultsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		faults  Faults
		wantErr string // "" for valid
	}{
		{"zero", Faults{}, ""},
		{"all rates summing to exactly 1", Faults{FailRate: 0.1, TimeoutRate: 0.2, ThrottleRate: 0.3, RejectRate: 0.3, AcceptThenTimeoutRate: 0.1}, ""},
		{"float rounding near 1", Faults{FailRate: 0.1, TimeoutRate: 0.2, ThrottleRate: 0.7}, ""},
		{"one rate at 1 with auth fail", Faults{AcceptThenTimeoutRate: 1, AuthFail: true}, ""},
		{"rate above 1", Faults{ThrottleRate: 1.01}, "throttle_rate must be between 0 and 1, got 1.01"},
		{"negative rate", Faults{RejectRate: -0.5}, "reject_rate must be between 0 and 1, got -0.5"},
		{"NaN rate", Faults{FailRate: math.NaN()}, "fail_rate must be between 0 and 1, got NaN"},
		{"sum above 1", Faults{FailRate: 0.5, AcceptThenTimeoutRate: 0.6},
			"fail_rate + timeout_rate + throttle_rate + reject_rate + accept_then_timeout_rate add up to 1.1, more than 1"},
		{"negative latency", Faults{Latency: Duration(-time.Second)}, "latency must not be negative, got -1s"},
	}
	for _, tt := range tests {
		err := tt.faults.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.wantErr {
			t.Errorf("%s: Validate() = %q, want %q", tt.name, got, tt.wantErr)
		}
	}
}

// The draw compares one number against cumulative bands in a fixed order.
func TestPick(t *testing.T) {
	t.Parallel()
	every := Faults{FailRate: 0.1, TimeoutRate: 0.1, ThrottleRate: 0.2, RejectRate: 0.1, AcceptThenTimeoutRate: 0.1}
	tests := []struct {
		faults    Faults
		u         float64
		want      outcome
		want429   bool
		situation string
	}{
		{Faults{}, 0, outcomeAccept, false, "no faults"},
		{Faults{}, 0.999, outcomeAccept, false, "no faults, high draw"},
		{Faults{AuthFail: true}, 0.999, outcomeAuth, false, "auth fail ignores the draw"},
		{Faults{AuthFail: true, FailRate: 1}, 0, outcomeAuth, false, "auth fail comes first"},
		{every, 0.05, outcomeFail, false, "fail band [0, 0.1)"},
		{every, 0.1, outcomeTimeout, false, "timeout band [0.1, 0.2)"},
		{every, 0.2, outcomeThrottle, false, "throttle band, lower half"},
		{every, 0.35, outcomeThrottle, true, "throttle band, upper half"},
		{every, 0.45, outcomeReject, false, "reject band [0.4, 0.5)"},
		{every, 0.55, outcomeAcceptThenTimeout, false, "accept-then-timeout band [0.5, 0.6)"},
		{every, 0.6, outcomeAccept, false, "above every band"},
		{Faults{RejectRate: 1}, 0.999, outcomeReject, false, "rate 1 covers every draw"},
	}
	for _, tt := range tests {
		got, got429 := pick(tt.faults, tt.u)
		if got != tt.want || got429 != tt.want429 {
			t.Errorf("%s: pick(u=%v) = %v, %v; want %v, %v", tt.situation, tt.u, got, got429, tt.want, tt.want429)
		}
	}
}

// A seed makes the sequence of outcomes reproducible; different seeds differ.
func TestSeedReproducesDraws(t *testing.T) {
	t.Parallel()
	f := Faults{FailRate: 0.2, TimeoutRate: 0.2, ThrottleRate: 0.2, RejectRate: 0.2}
	draws := func(seed int64) string {
		s := NewWithOptions(f, Options{Seed: seed})
		var b strings.Builder
		for range 64 {
			b.WriteByte(byte('0' + s.decide().outcome))
		}
		return b.String()
	}
	first, again, other := draws(42), draws(42), draws(43)
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("same seed, different draws (-first +second):\n%s", diff)
	}
	if first == other {
		t.Errorf("seeds 42 and 43 drew the same 64 outcomes: %s", first)
	}
	if !strings.ContainsAny(first, "0") || !strings.ContainsAny(first, "2") {
		t.Errorf("64 draws at 20%% per fault should include successes and fails: %s", first)
	}
}
