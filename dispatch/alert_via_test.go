package dispatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/alert"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/sending"
)

// TestPolicyStepVia: a step's via names a platform with a default account or an account,
// and only a step that calls may advance on no answer; anything else is refused on the
// step's field, with nothing saved. A valid via is kept as given.
func TestPolicyStepVia(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	f.account(t, "sandbox-night")
	tests := []struct {
		name  string
		steps []alert.PolicyStep
		field string
	}{
		{"an account nobody has", []alert.PolicyStep{{Targets: []string{"E1003"}, Wait: "10m"},
			{Targets: []string{"E1004"}, Wait: "10m"}, {Targets: []string{"E2001"}, Wait: "10m", Via: "no-such-account"}}, "steps[2].via"},
		{"a platform with no default account", []alert.PolicyStep{{Targets: []string{"E1003"}, Wait: "10m", Via: "voice"}}, "steps[0].via"},
		{"advancing a step that does not call", []alert.PolicyStep{{Targets: []string{"E1003"}, Wait: "10m", Via: "sandbox-night",
			AdvanceOnNoAnswer: true}}, "steps[0].advance_on_no_answer"},
		{"advancing a step by the alert's own account", []alert.PolicyStep{{Targets: []string{"E1003"}, Wait: "10m"},
			{Targets: []string{"E1004"}, Wait: "10m", AdvanceOnNoAnswer: true}}, "steps[1].advance_on_no_answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.d.Alerts().CreatePolicy(ctx, f.by, alert.EscalationPolicy{Name: "bad", Steps: tt.steps})
			var fe *kernel.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("%v, want a field error on %s", err, tt.field)
			}
			if _, err := alert.Of(f.store).PolicyByName(ctx, "bad"); !errors.Is(err, kernel.ErrNotFound) {
				t.Fatalf("a refused policy was saved: %v", err)
			}
		})
	}
	if err := f.store.Sending().SaveAccount(ctx, &sending.Account{Name: "ivr", Platform: "voice", Enabled: true, MaxAttempts: 3,
		Config: map[string]string{"provider": "http", "url": "https://ivr.example/call", "callback_token": "t"}}); err != nil {
		t.Fatal(err)
	}
	want := []alert.PolicyStep{{Targets: []string{"E1003"}, Wait: "10m", Via: "sandbox"},
		{Targets: []string{"E1004"}, Wait: "10m", Via: "sandbox-night"}, {Targets: []string{"E2001"}, Wait: "10m", Via: "ivr", AdvanceOnNoAnswer: true}}
	f.policy(t, alert.EscalationPolicy{Name: "good", Steps: []alert.PolicyStep{{Targets: []string{"E1003"}, Wait: "10m", Via: " sandbox "},
		{Targets: []string{"E1004"}, Wait: "10m", Via: "sandbox-night"}, {Targets: []string{"E2001"}, Wait: "10m", Via: "ivr", AdvanceOnNoAnswer: true}}})
	p, err := alert.Of(f.store).PolicyByName(ctx, "good")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, p.Steps); diff != "" {
		t.Errorf("steps as stored (-want +got):\n%s", diff)
	}
}

// TestStepGoesVia: a step's notices go through the account its via names, while the
// notice that the alert is taken goes through the alert's own account.
func TestStepGoesVia(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	f.account(t, "sandbox-night")
	f.policy(t, alert.EscalationPolicy{Name: "two-ways", NotifyOnAck: true, Steps: []alert.PolicyStep{
		{Targets: []string{"E1003"}, Wait: "10m"}, {Targets: []string{"E1004"}, Wait: "10m", Via: "sandbox-night"}}})
	a := f.open(t, "two-ways")
	f.advance(t, 10*time.Minute)
	if diff := cmp.Diff([]string{"1.1 E1003", "1.2 E1004"}, f.steps(t, a.ID)); diff != "" {
		t.Fatalf("steps (-want +got):\n%s", diff)
	}
	if _, err := f.d.Alerts().AcknowledgeAlert(ctx, f.by, a.ID, "E1004", alert.AckViaAPI, ""); err != nil {
		t.Fatal(err)
	}
	got := f.accountsOfNotices(t, a.ID)
	want := []string{"E1003 sandbox", "E1004 sandbox-night", "E1003 sandbox"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notices by account (-want +got):\n%s", diff)
	}
}

// account saves an enabled sandbox account called name.
func (f *alertFixture) account(t *testing.T, name string) *sending.Account {
	t.Helper()
	a := &sending.Account{Name: name, Platform: "sandbox", Enabled: true, MaxAttempts: 3, Config: map[string]string{}}
	if err := f.store.Sending().SaveAccount(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

// accountsOfNotices lists the messages of an alert as "<external id> <account>", oldest
// first.
func (f *alertFixture) accountsOfNotices(t *testing.T, alertID int64) []string {
	t.Helper()
	return testenv.QueryStrings(t, f.store.SQL(), `SELECT r.external_id, a.name FROM messages m JOIN recipients r ON r.id = m.recipient_id
		JOIN accounts a ON a.id = m.account_id WHERE m.alert_id = ? ORDER BY m.created_at, m.id`, alertID)
}
