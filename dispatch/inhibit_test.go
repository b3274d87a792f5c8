package dispatch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"herald/alert"
	"herald/delivery"
	"herald/dispatch"
	"herald/inbound"
	"herald/inhibit"
)

// newInhibitFixture is an alert fixture with the policy "night" (E2001, then a 10m wait)
// and an Alertmanager integration "prom" routing every alert to it on sandbox, to
// recipients besides.
func newInhibitFixture(t *testing.T, recipients ...string) (*alertFixture, *inbound.Integration) {
	t.Helper()
	f := newAlertFixture(t)
	f.policy(t, alert.EscalationPolicy{Name: "night", Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}})
	it, _, err := f.d.Inbound().CreateIntegration(context.Background(), f.by, inbound.IntegrationInput{Name: "prom",
		Format: inbound.FormatAlertmanager, DefaultRoute: &inbound.Route{Policy: "night", Platform: "sandbox", Recipients: recipients}})
	if err != nil {
		t.Fatal(err)
	}
	return f, it
}

// alertmanagerBody is an Alertmanager webhook body of one alert of name in cluster at
// severity, firing or resolved.
func alertmanagerBody(status, name, cluster, severity string) []byte {
	return fmt.Appendf(nil, `{"version":"4","status":%q,"receiver":"herald","alerts":[{"status":%q,"fingerprint":"%s-%s",
		"labels":{"alertname":%q,"cluster":%q,"severity":%q},"annotations":{"summary":"%s on %s"},
		"startsAt":"2026-11-25T10:00:00Z","endsAt":"0001-01-01T00:00:00Z"}]}`,
		status, status, name, cluster, name, cluster, severity, name, cluster)
}

// A critical DBDown in cluster sh-core inhibits a warning SlowQuery of sh-core (opened,
// recorded as inhibited by DBDown, nothing sent, no step) but not one of bj; DBDown's
// recovery releases the sh-core warning: its escalation starts and its first step
// notifies the policy's person before the recovery is answered.
func TestInhibitionByEqualLabelsAndReleaseOnRecovery(t *testing.T) {
	t.Parallel()
	f, it := newInhibitFixture(t, "E2002")
	ctx := context.Background()
	if _, err := dispatch.Inhibition(f.d).CreateRule(ctx, f.by, inhibit.RuleInput{Name: "db-down",
		Source: []delivery.Matcher{{Name: "severity", Value: "critical"}}, Target: []delivery.Matcher{{Name: "severity", Value: "warning"}},
		Equal: []string{"cluster"}}); err != nil {
		t.Fatal(err)
	}
	open := func(name, cluster, severity string) int64 {
		t.Helper()
		recs, err := f.d.Inbound().Receive(ctx, it, alertmanagerBody("firing", name, cluster, severity))
		if err != nil || len(recs) != 1 || recs[0].Outcome != inbound.OutcomeCreated {
			t.Fatalf("%s %s: %+v, %v", name, cluster, recs, err)
		}
		return *recs[0].AlertID
	}
	dbDown := open("DBDown", "sh-core", "critical")
	slowSH := open("SlowQuery", "sh-core", "warning")
	slowBJ := open("SlowQuery", "bj", "warning")

	inh, err := inhibit.Of(f.store).Inhibitions(ctx, []int64{dbDown, slowSH, slowBJ})
	if err != nil {
		t.Fatal(err)
	}
	if got := inh[slowSH]; got.State != inhibit.StateInhibited || got.SourceAlertID != dbDown || got.RuleName != "db-down" {
		t.Fatalf("sh-core warning: inhibition %+v, want inhibited by alert %d", got, dbDown)
	}
	if _, ok := inh[slowBJ]; ok || len(inh) != 1 {
		t.Fatalf("inhibitions %+v, want only the sh-core warning's", inh)
	}
	if n := f.noticesTo(t, slowSH); len(n) != 0 {
		t.Fatalf("the inhibited warning sent %q", n)
	}
	if n := f.noticesTo(t, slowBJ); len(n["E2002"]) != 1 {
		t.Fatalf("the bj warning's notices %q, want one to E2002", n)
	}
	f.advance(t, 11*time.Minute)
	if s := f.steps(t, slowSH); len(s) != 0 {
		t.Fatalf("the inhibited warning escalated: %v", s)
	}
	if s := f.steps(t, slowBJ); len(s) != 1 {
		t.Fatalf("the bj warning's steps %v, want its first", s)
	}

	recs, err := f.d.Inbound().Receive(ctx, it, alertmanagerBody("resolved", "DBDown", "sh-core", "critical"))
	if err != nil || recs[0].Outcome != inbound.OutcomeResolved {
		t.Fatalf("recovery: %+v, %v", recs, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(f.noticesTo(t, slowSH)["E2001"]) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no notice of the released warning within 5 s: %q", f.noticesTo(t, slowSH))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := f.noticesTo(t, slowSH)["E2001"]; !strings.Contains(n[0], "SlowQuery on sh-core") {
		t.Errorf("released notice %q", n[0])
	}
	inh, err = inhibit.Of(f.store).Inhibitions(ctx, []int64{slowSH})
	if err != nil || inh[slowSH].State != inhibit.StateReleased {
		t.Fatalf("after the recovery: %+v, %v", inh, err)
	}
	// The pass finds nothing more to release, and a second one changes nothing.
	if n, err := dispatch.Inhibition(f.d).Settle(ctx); err != nil || n != 0 {
		t.Fatalf("settle after the release: %d, %v", n, err)
	}
}

// An alert resolved another way (here by the API) releases what it inhibited at the
// pass; an inhibited alert that recovers first is no longer inhibited and never
// escalates.
func TestInhibitionSettledByThePass(t *testing.T) {
	t.Parallel()
	f, it := newInhibitFixture(t)
	ctx := context.Background()
	if _, err := dispatch.Inhibition(f.d).CreateRule(ctx, f.by, inhibit.RuleInput{Name: "node-down",
		Source: []delivery.Matcher{{Name: "label:alertname", Value: "NodeDown"}}, Target: []delivery.Matcher{{Name: "label:alertname", Value: "NodeDown", Negate: true}},
		Equal: []string{"cluster"}}); err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	for _, name := range []string{"NodeDown", "DiskSlow", "PingLost"} {
		recs, err := f.d.Inbound().Receive(ctx, it, alertmanagerBody("firing", name, "gz", "warning"))
		if err != nil || recs[0].AlertID == nil {
			t.Fatalf("%s: %+v, %v", name, recs, err)
		}
		ids[name] = *recs[0].AlertID
	}
	if _, err := f.d.Inbound().Receive(ctx, it, alertmanagerBody("resolved", "PingLost", "gz", "warning")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Alerts().ResolveAlert(ctx, f.by, ids["NodeDown"], "", alert.AckViaConsole, ""); err != nil {
		t.Fatal(err)
	}
	released, err := dispatch.Inhibition(f.d).Settle(ctx)
	if err != nil || released != 1 {
		t.Fatalf("the pass released %d (%v), want 1", released, err)
	}
	inh, err := inhibit.Of(f.store).Inhibitions(ctx, []int64{ids["DiskSlow"], ids["PingLost"]})
	if err != nil {
		t.Fatal(err)
	}
	if inh[ids["DiskSlow"]].State != inhibit.StateReleased || inh[ids["PingLost"]].State != inhibit.StateEnded {
		t.Fatalf("inhibitions %+v, want DiskSlow released and PingLost ended", inh)
	}
	if s := f.steps(t, ids["DiskSlow"]); len(s) != 1 {
		t.Errorf("DiskSlow's steps %v, want its first fired", s)
	}
	if s := f.steps(t, ids["PingLost"]); len(s) != 0 {
		t.Errorf("PingLost escalated: %v", s)
	}
}

// TestInhibitRuleChangeAppliesAtOnce: the integrations' intake keeps the rules compiled
// for a second, but a rule made through the process's service applies to the very next
// event: an event before the rule is not inhibited, the one right after it is.
func TestInhibitRuleChangeAppliesAtOnce(t *testing.T) {
	t.Parallel()
	f, it := newInhibitFixture(t, "E2002")
	ctx := context.Background()
	open := func(name, cluster, severity string) int64 {
		t.Helper()
		recs, err := f.d.Inbound().Receive(ctx, it, alertmanagerBody("firing", name, cluster, severity))
		if err != nil || len(recs) != 1 || recs[0].Outcome != inbound.OutcomeCreated {
			t.Fatalf("%s %s: %+v, %v", name, cluster, recs, err)
		}
		return *recs[0].AlertID
	}
	open("DBDown", "sh-core", "critical")
	before := open("SlowQuery", "sh-core", "warning")
	if _, err := dispatch.Inhibition(f.d).CreateRule(ctx, f.by, inhibit.RuleInput{Name: "db-down",
		Source: []delivery.Matcher{{Name: "severity", Value: "critical"}}, Target: []delivery.Matcher{{Name: "severity", Value: "warning"}},
		Equal: []string{"cluster"}}); err != nil {
		t.Fatal(err)
	}
	after := open("DiskFull", "sh-core", "warning")
	inh, err := inhibit.Of(f.store).Inhibitions(ctx, []int64{before, after})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := inh[before]; ok {
		t.Error("the warning before the rule was inhibited")
	}
	if got, ok := inh[after]; !ok || got.RuleName != "db-down" {
		t.Errorf("the warning right after the rule: %+v, want inhibited by db-down", got)
	}
}
