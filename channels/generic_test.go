package channels

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"herald/simulator"
)

func TestGenericFaults(t *testing.T) {
	t.Parallel()
	for _, platform := range []string{"tianyuan", "zhaohu"} {
		t.Run(platform, func(t *testing.T) {
			t.Parallel()
			rig := startSim(t, simulator.Options{})
			g, err := NewGeneric(platform, map[string]string{"base_url": rig.url + "/" + platform, "token": "t0ken"}, true)
			if err != nil {
				t.Fatal(err)
			}
			runFaultTable(t, rig, adapterCase{platform: platform, sender: g, to: "E1001", retryAfter: true, providerID: true})
		})
	}
}

// The simulator answers a throttle in two ways, HTTP 200 with code 42901 and HTTP 429
// with code 42900; both are rate limits with the Retry-After it sends.
func TestGenericThrottleForms(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{Seed: 11})
	rig.sim.SetFaults(simulator.Faults{ThrottleRate: 1})
	g, err := NewGeneric("tianyuan", map[string]string{"base_url": rig.url + "/tianyuan", "path": "/messages", "token": "t"}, true)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]bool{}
	for range 16 {
		_, err := g.Send(context.Background(), newMessage("E1"))
		ce, _ := errors.AsType[*Error](err)
		if ce == nil || ce.Class != RateLimited || ce.RetryAfter != time.Second {
			t.Fatalf("Send: %v, want rate_limited with RetryAfter 1s", err)
		}
		codes[ce.Code] = true
	}
	if !codes["42901"] || !codes["http 429"] {
		t.Errorf("codes seen = %v, want both 42901 (HTTP 200) and http 429", codes)
	}
}

// A missing token is refused by the simulator with HTTP 401.
func TestGenericBadTokenIsAuth(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	g := newGeneric("zhaohu", map[string]string{"base_url": rig.url + "/zhaohu", "token": ""}, true)
	_, err := g.Send(context.Background(), newMessage("E1"))
	if c := classOf(t, err); c != Auth {
		t.Errorf("class = %s, want auth (%v)", c, err)
	}
}

func TestGenericCodeClass(t *testing.T) {
	for code, want := range map[int]Class{
		42901: RateLimited, 42900: RateLimited, 40101: Auth, 40301: Auth,
		40001: Permanent, 40002: Permanent, 50000: Transient, 12345: Transient,
	} {
		if got := genericCodeClass(code); got != want {
			t.Errorf("genericCodeClass(%d) = %s, want %s", code, got, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"7", 7 * time.Second},
		{"-3", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set("Retry-After", tc.header)
		}
		if got := retryAfter(h, now); got != tc.want {
			t.Errorf("retryAfter(%q) = %s, want %s", tc.header, got, tc.want)
		}
	}
}
