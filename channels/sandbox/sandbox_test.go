package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"herald/channels"
	"herald/i18n"
	"herald/simulator"
)

// The sandbox answers as a platform would, fault by fault, and its errors carry the
// classes the retry policy keys on; only a delivery the simulator took is recorded.
func TestSandboxFaults(t *testing.T) {
	sim := simulator.New(simulator.Faults{})
	s := New(sim)
	for _, tc := range []struct {
		name     string
		faults   simulator.Faults
		want     channels.Class // "" for success
		recorded bool
		timeout  bool
	}{
		{name: "none", recorded: true},
		{name: "fail", faults: simulator.Faults{FailRate: 1}, want: channels.Transient},
		{name: "timeout", faults: simulator.Faults{TimeoutRate: 1}, want: channels.Transient, timeout: true},
		{name: "throttle", faults: simulator.Faults{ThrottleRate: 1}, want: channels.RateLimited},
		{name: "reject", faults: simulator.Faults{RejectRate: 1}, want: channels.Permanent},
		{name: "auth", faults: simulator.Faults{AuthFail: true}, want: channels.Auth},
		{name: "accept then timeout", faults: simulator.Faults{AcceptThenTimeoutRate: 1}, want: channels.Transient, recorded: true, timeout: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim.SetFaults(tc.faults)
			sim.Reset()
			deadline := 5 * time.Second
			if tc.timeout {
				deadline = 200 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			m := channels.Message{ID: "msg-" + strings.ReplaceAll(tc.name, " ", "-"), To: "E1001", MsgType: "text", Content: "对账提醒 " + tc.name}
			receipt, err := s.Send(ctx, m)
			if tc.want == "" {
				if err != nil || receipt.ProviderMessageID == "" {
					t.Fatalf("Send = %+v, %v; want success with a provider message id", receipt, err)
				}
			} else {
				ce, ok := errors.AsType[*channels.Error](err)
				if !ok {
					t.Fatalf("Send: %v (%T), want a *channels.Error of class %s", err, err, tc.want)
				}
				if ce.Class != tc.want {
					t.Errorf("class = %s, want %s (%v)", ce.Class, tc.want, ce)
				}
				if tc.want == channels.RateLimited && ce.RetryAfter <= 0 {
					t.Errorf("RetryAfter = %s, want the simulator's wait", ce.RetryAfter)
				}
			}
			got := sim.Deliveries()
			switch {
			case !tc.recorded && len(got) != 0:
				t.Errorf("deliveries = %+v, want none", got)
			case tc.recorded && (len(got) != 1 || got[0].Platform != "sandbox" || got[0].To != m.To || got[0].RequestID != m.ID || got[0].Content != m.Content):
				t.Errorf("deliveries = %+v, want the one message to %s", got, m.To)
			}
		})
	}
}

// A registry given the sandbox sends through it and tests it; without one, the sandbox
// platform is unavailable, and says so.
func TestRegistryGivenTheSandbox(t *testing.T) {
	sim := simulator.New(simulator.Faults{})
	acct := channels.Account{ID: 1, Name: "sandbox", Platform: "sandbox", UpdatedAt: time.Unix(100, 0)}
	reg := channels.NewRegistry(New(sim))
	s, err := reg.Sender(acct)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(context.Background(), channels.Message{ID: "m1", To: "E1001", MsgType: "text", Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	if n := len(sim.Deliveries()); n != 1 {
		t.Errorf("deliveries = %d, want 1", n)
	}

	res := reg.Probe(context.Background(), acct)
	if !res.OK || !strings.Contains(res.Summary.In(i18n.English), "always ready") {
		t.Errorf("probe = %+v (%s), want ready", res, res.Summary.In(i18n.English))
	}
	sim.SetFaults(simulator.Faults{RejectRate: 0.5})
	res = reg.Probe(context.Background(), acct)
	if lines := strings.Join(res.Lines(i18n.English), "\n"); !strings.Contains(lines, "RejectRate:0.5") {
		t.Errorf("probe steps %q do not name the faults set", lines)
	}
	for _, lang := range i18n.Languages {
		for _, line := range res.Lines(lang) {
			if strings.Contains(line, "channels.probe.") {
				t.Errorf("probe step untranslated in %s: %q", lang, line)
			}
		}
	}

	res = channels.NewRegistry(nil).Probe(context.Background(), acct)
	if res.OK || !strings.Contains(res.Summary.In(i18n.English), "sandbox platform is not available") {
		t.Errorf("probe without a sandbox = %+v, want not available", res.Summary.In(i18n.English))
	}
}
