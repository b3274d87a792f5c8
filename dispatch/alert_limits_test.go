package dispatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"herald/access"
	"herald/alert"
	"herald/audit"
	"herald/directory"
	"herald/dispatch"
	"herald/duty"
	"herald/kernel"
	"herald/models"
	"herald/tasks"
)

// cappedKey makes an API key capped at max recipients per request and returns its id.
func (f *alertFixture) cappedKey(t *testing.T, max string) *access.APIKey {
	t.Helper()
	k, _, err := f.d.Access().CreateAPIKey(context.Background(), f.by, access.APIKeyInput{Name: "capped-" + max, Scopes: "send", MaxRecipients: max})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// An alert's policy counts toward the limits of whoever sends it: a key capped at one
// recipient cannot reach a department through the policy (422 naming ack.policy, and
// nothing written), and a key capped at three can.
func TestAlertPolicyWithinKeyCap(t *testing.T) {
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "counter", Steps: []alert.PolicyStep{{Targets: []string{"department:Counter"}, Wait: "10m"}}})
	for _, tc := range []struct {
		max   string
		field string
	}{{"1", "ack.policy"}, {"3", ""}} {
		k := f.cappedKey(t, tc.max)
		before := f.messages(t)
		res, err := f.d.Submit(ctx, dispatch.Request{Source: "api", Actor: "apikey:" + k.Name, APIKeyID: &k.ID, MaxRecipients: k.MaxRecipientsPerRequest,
			Platform: "sandbox", Recipients: []string{"E2003"}, Text: "核心系统告警", Ack: &dispatch.AckRequest{Policy: "counter"}})
		var fe *kernel.FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("cap %s: %v", tc.max, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("cap %s: got %v (result %v), want a field error on %s", tc.max, err, res, tc.field)
		case tc.field != "" && f.messages(t) != before:
			t.Errorf("cap %s: a refused alert wrote %d messages", tc.max, f.messages(t)-before)
		}
	}
}

// A step that would take an alert past its key's cap, the cap or the people having
// changed since it opened, calls nobody and says why.
func TestAlertStepWithinKeyCap(t *testing.T) {
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "counter", Steps: []alert.PolicyStep{{Targets: []string{"department:Counter"}, Wait: "10m"}}})
	k := f.cappedKey(t, "3")
	res, err := f.d.Submit(ctx, dispatch.Request{Source: "api", Actor: "apikey:" + k.Name, APIKeyID: &k.ID, MaxRecipients: k.MaxRecipientsPerRequest,
		Platform: "sandbox", Recipients: []string{"E2003"}, Text: "核心系统告警", Ack: &dispatch.AckRequest{Policy: "counter"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.SQL().Exec("UPDATE api_keys SET max_recipients_per_request = 1 WHERE id = ?", k.ID); err != nil {
		t.Fatal(err)
	}
	f.store.Access().ForgetAPIKeys()
	f.advance(t, 10*time.Minute)
	if diff := cmp.Diff([]string{"1.1 (over_key_cap)"}, f.steps(t, res.Alert.ID)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if got := f.noticesTo(t, res.Alert.ID); len(got["E2001"])+len(got["E2002"]) != 0 {
		t.Errorf("the department was called past the key's cap: %v", got)
	}
}

// A policy that can reach more people than the approval threshold sends its alert for
// approval, however few the request names: nobody is called and no step is due until
// a second person approves. A step whose people grew past the threshold since an alert
// nobody approved opened calls nobody.
func TestAlertPolicyOverApprovalThreshold(t *testing.T) {
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "counter", Steps: []alert.PolicyStep{
		{Targets: []string{"E1004"}, Wait: "10m"}, {Targets: []string{"department:Counter"}, Wait: "10m"}}})
	if err := f.store.Intake().SetApprovalThreshold(ctx, 3, "admin"); err != nil {
		t.Fatal(err)
	}
	f.d.ForgetThreshold()
	a := f.open(t, "counter", "E2003")
	b, err := f.store.BatchByID(ctx, a.BatchID)
	if err != nil {
		t.Fatal(err)
	}
	if b.Approval != models.ApprovalAwaiting {
		t.Fatalf("a one-person alert whose policy reaches 4 is %q, want awaiting approval over a threshold of 3", b.Approval)
	}
	f.advance(t, time.Hour)
	if got := f.steps(t, a.ID); len(got) != 0 {
		t.Errorf("steps fired before the approval: %v", got)
	}

	if err := f.store.Intake().SetApprovalThreshold(ctx, 4, "admin"); err != nil {
		t.Fatal(err)
	}
	f.d.ForgetThreshold()
	grown := f.open(t, "counter", "E2003")
	if _, err := f.d.Directory().CreateRecipient(ctx, f.by, directory.Recipient{ExternalID: "E2009", Name: "New Teller", OrgType: directory.Branch,
		Branch: "Pudong Branch", Department: "Counter", TianyuanID: "ty_E2009", Active: true}); err != nil {
		t.Fatal(err)
	}
	f.advance(t, 10*time.Minute)
	f.advance(t, 10*time.Minute)
	if diff := cmp.Diff([]string{"1.1 E1004", "1.2 (needs_approval)"}, f.steps(t, grown.ID)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// A rotation a policy targets cannot be deleted or renamed (the error names the
// policies, and nothing changes); changed otherwise, or once no policy names it, it can.
func TestRotationUsedByPolicy(t *testing.T) {
	f := newAlertFixture(t)
	ctx := context.Background()
	spec := duty.RotationSpec{Name: "night", Members: []string{"E1001", "E1002"}, Start: "2026-09-01", TurnDays: 1, Covers: duty.CoversEveryDay}
	if _, err := f.d.Duty().CreateRotation(ctx, f.by, spec); err != nil {
		t.Fatal(err)
	}
	f.policy(t, alert.EscalationPolicy{Name: "core", Steps: []alert.PolicyStep{{Targets: []string{"E1004", "rotation:night+1"}, Wait: "10m"}}})
	f.policy(t, alert.EscalationPolicy{Name: "other", Steps: []alert.PolicyStep{{Targets: []string{"E1004"}, Wait: "10m"}}})
	want := []any{"Name", "night", "Policies", "core"}
	renamed := spec
	renamed.Name = "nights"
	for name, try := range map[string]func() error{
		"delete": func() error { return f.d.Duty().DeleteRotation(ctx, f.by, "night") },
		"rename": func() error { _, err := f.d.Duty().UpdateRotation(ctx, f.by, "night", renamed); return err },
	} {
		err := try()
		got, ok := errors.AsType[*kernel.DomainError](err)
		if !errors.Is(err, duty.ErrRotationInUse) || !ok || !cmp.Equal(want, got.Args) {
			t.Errorf("%s: got %v, want duty.ErrRotationInUse with %v", name, err, want)
		}
	}
	if _, err := f.store.Duty().RotationByName(ctx, "night"); err != nil {
		t.Errorf("the rotation is gone after refusals: %v", err)
	}
	spec.TurnDays = 2
	if _, err := f.d.Duty().UpdateRotation(ctx, f.by, "night", spec); err != nil {
		t.Errorf("a change that keeps the name: %v", err)
	}
	if _, err := f.d.Alerts().UpdatePolicy(ctx, f.by, "core", alert.EscalationPolicy{Name: "core", Steps: []alert.PolicyStep{{Targets: []string{"E1004"}, Wait: "10m"}}}); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Duty().DeleteRotation(ctx, f.by, "night"); err != nil {
		t.Errorf("delete once no policy names it: %v", err)
	}
}

// A step that finds nobody raises the alarm (its alert.unrouted event, the dashboard's
// count, herald_alerts_unrouted); an alert that called nobody through every step is
// not exhausted within seconds but stays open, audited, until someone takes it.
func TestUnroutedAlertRaisesTheAlarm(t *testing.T) {
	f := newAlertFixture(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	dispatch.SetAckObserver(f.d, tasks.NewAlertMetrics(reg, f.store))
	// Mondays only: nobody's turn on the fixture's Wednesday.
	if _, err := f.d.Duty().CreateRotation(ctx, f.by, duty.RotationSpec{Name: "monday", Members: []string{"E1001"}, Start: "2026-09-07",
		TurnDays: 1, Covers: duty.CoversWeekdays, Weekdays: []int{1}}); err != nil {
		t.Fatal(err)
	}
	f.policy(t, alert.EscalationPolicy{Name: "mondays", Repeat: 1, Steps: []alert.PolicyStep{{Targets: []string{"rotation:monday"}, Wait: "10m"}}})
	// A monitor's alert opens even so (one asked for through the API is refused, see
	// TestAlertNobodyHearsOfIsRefused).
	a := f.openFrom(t, dispatch.SourceInbound, "mondays")
	f.advance(t, time.Hour)
	if got := f.alert(t, a.ID); got.State != alert.AlertOpen {
		t.Fatalf("an alert that called nobody is %s, want open", got.State)
	}
	if diff := cmp.Diff([]string{"1.1 (rotation_off)", "2.1 (rotation_off)"}, f.steps(t, a.ID)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	var unrouted int
	for _, e := range f.alertEvents(t) {
		if e.Type == alert.EventAlertUnrouted && e.AlertID == a.ID {
			unrouted++
		}
	}
	if unrouted != 3 {
		t.Errorf("%d alert.unrouted events, want one per step and one for the closing check", unrouted)
	}
	if n, err := alert.Of(f.store).CountUnroutedAlerts(ctx); err != nil || n != 1 {
		t.Errorf("unrouted alerts: %d %v, want 1", n, err)
	}
	if got := gauge(t, reg, "herald_alerts_unrouted"); got != 1 {
		t.Errorf("herald_alerts_unrouted = %v, want 1", got)
	}
	entries, err := f.store.AuditLog().List(ctx, audit.Filter{Action: "alert.unrouted"}, 10)
	if err != nil || len(entries) != 1 {
		t.Errorf("alert.unrouted audit entries: %d %v, want 1", len(entries), err)
	}
	if _, err := f.d.Alerts().AcknowledgeAlert(ctx, f.by, a.ID, "", alert.AckViaConsole, ""); err != nil {
		t.Fatal(err)
	}
	if n, err := alert.Of(f.store).CountUnroutedAlerts(ctx); err != nil || n != 0 {
		t.Errorf("unrouted alerts after the acknowledgment: %d %v, want 0", n, err)
	}
}

// gauge reads an unlabelled gauge from reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}
