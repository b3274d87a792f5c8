package dispatch_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"herald/alert"
	"herald/dispatch"
	"herald/kernel"
)

// TestStepWaitKnob: a dispatcher built with Config.StepWait (HERALD_TEST_KNOBS step_wait)
// accepts a step wait down to it and dates the next step by it; without it the shortest
// wait stays MinStepWait.
func TestStepWaitKnob(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	short := alert.EscalationPolicy{Name: "short", Steps: []alert.PolicyStep{
		{Targets: []string{"E1003"}, Wait: "2s"}, {Targets: []string{"E1004"}, Wait: "1h"}}}
	_, err := f.d.Alerts().CreatePolicy(ctx, f.by, short)
	var fe *kernel.FieldError
	if !errors.As(err, &fe) || fe.Field != "steps[0].wait" {
		t.Fatalf("a 2s wait without the knob: %v, want a field error on steps[0].wait", err)
	}

	knobbed, err := dispatch.NewDispatcher(dispatch.Config{Store: f.store, Enqueuer: dispatch.EnqueuerOf(f.d), Location: time.UTC,
		Now: f.clock, Log: slog.New(slog.DiscardHandler), StepWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tooShort := short
	tooShort.Name, tooShort.Steps = "too-short", []alert.PolicyStep{{Targets: []string{"E1003"}, Wait: "1s"}}
	if _, err := knobbed.Alerts().CreatePolicy(ctx, f.by, tooShort); !errors.As(err, &fe) || fe.Field != "steps[0].wait" {
		t.Fatalf("a 1s wait with the knob at 2s: %v, want a field error on steps[0].wait", err)
	}
	if _, err := knobbed.Alerts().CreatePolicy(ctx, f.by, short); err != nil {
		t.Fatalf("a 2s wait with the knob at 2s: %v", err)
	}
	f.d = knobbed
	a := f.open(t, "short")
	if got := f.steps(t, a.ID); len(got) != 1 {
		t.Fatalf("steps fired at the opening: %v, want the first", got)
	}
	if n := f.advance(t, time.Second); n != 0 {
		t.Fatalf("%d steps fired a second on, want none before the 2 s wait", n)
	}
	if n := f.advance(t, time.Second); n != 1 {
		t.Fatalf("%d steps fired 2 s on, want the second", n)
	}
}
