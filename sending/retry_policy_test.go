package sending_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/kernel"
	"herald/sending"
)

func ptr[T any](v T) *T { return &v }

func TestRetryPolicyRoundTripAndNull(t *testing.T) {
	t.Parallel()
	s, acct := newAccount(t)
	ctx := context.Background()
	policy := sending.RetryPolicy{
		"transient":    {MaxRetries: ptr(5), DelaySeconds: ptr(10.0), MaxDelaySeconds: ptr(300.0)},
		"rate_limited": {Factor: ptr(2.0)},
		"auth":         {}, // adjusts nothing: not stored
	}
	acct.RetryPolicy = policy
	if err := s.Sending().SaveAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	got, err := s.Sending().AccountByID(ctx, acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := sending.RetryPolicy{"transient": policy["transient"], "rate_limited": policy["rate_limited"]}
	if diff := cmp.Diff(want, got.RetryPolicy); diff != "" {
		t.Errorf("retry policy after a round trip (-want +got):\n%s", diff)
	}

	got.RetryPolicy = sending.RetryPolicy{"auth": {}}
	if err := s.Sending().SaveAccount(ctx, got); err != nil {
		t.Fatal(err)
	}
	var raw sql.NullString
	if err := s.SQL().QueryRow("SELECT retry_policy FROM accounts WHERE id = ?", acct.ID).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if raw.Valid {
		t.Errorf("a policy that adjusts nothing is stored as %q, want NULL", raw.String)
	}
}

func TestRetryPolicyValidation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		policy sending.RetryPolicy
		field  string // "" = valid
	}{
		{sending.RetryPolicy{"transient": {MaxRetries: ptr(0)}, "permanent": {MaxRetries: ptr(2), DelaySeconds: ptr(60.0)}}, ""},
		{sending.RetryPolicy{"throttled": {MaxRetries: ptr(1)}}, "retry_policy.throttled"},
		{sending.RetryPolicy{"flaky": {}}, "retry_policy.flaky"},
		{sending.RetryPolicy{"transient": {MaxRetries: ptr(-1)}}, "retry_policy.transient.max_retries"},
		{sending.RetryPolicy{"transient": {MaxRetries: ptr(101)}}, "retry_policy.transient.max_retries"},
		{sending.RetryPolicy{"auth": {DelaySeconds: ptr(0.5)}}, "retry_policy.auth.delay_seconds"},
		{sending.RetryPolicy{"rate_limited": {Factor: ptr(0.9)}}, "retry_policy.rate_limited.factor"},
		{sending.RetryPolicy{"rate_limited": {MaxDelaySeconds: ptr(90000.0)}}, "retry_policy.rate_limited.max_delay_seconds"},
		{sending.RetryPolicy{"transient": {DelaySeconds: ptr(60.0), MaxDelaySeconds: ptr(30.0)}}, "retry_policy.transient.max_delay_seconds"},
	} {
		err := c.policy.Validate()
		var fe *kernel.FieldError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%v: %v, want valid", c.policy, err)
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field):
			t.Errorf("%v: %v, want an error on %s", c.policy, err, c.field)
		}
	}
}
