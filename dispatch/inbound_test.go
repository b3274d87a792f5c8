package dispatch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"herald/alert"
	"herald/delivery"
	"herald/duty"
	"herald/inbound"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/templates"

	"github.com/google/go-cmp/cmp"
)

// newInboundFixture is the alert fixture with a policy that calls E2001 after ten
// minutes, and an events integration routing critical events to E2002 (branch staff,
// always reached) under it.
func newInboundFixture(t *testing.T, notifyOnResolve bool) (*alertFixture, *inbound.Integration) {
	f := newAlertFixture(t)
	f.policy(t, alert.EscalationPolicy{Name: "night", Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}})
	it, _, err := f.d.Inbound().CreateIntegration(context.Background(), f.by, inbound.IntegrationInput{Name: "monitor", Format: inbound.FormatEvents,
		Routes: []inbound.Route{{Matchers: []delivery.Matcher{{Name: "severity", Value: "critical"}}, Policy: "night", Platform: "sandbox",
			Recipients: []string{"E2002"}}},
		NotifyOnResolve: notifyOnResolve})
	if err != nil {
		t.Fatal(err)
	}
	return f, it
}

func event(action, key, severity string) []byte {
	return fmt.Appendf(nil, `{"event_action":%q,"dedup_key":%q,"severity":%q,"title":"核心系统 CPU 过高","description":"node1 上 CPU 95%%","labels":{"instance":"node1"}}`,
		action, key, severity)
}

// A firing event opens an alert through its route (the intake sending its notice, the
// policy escalating); its duplicates count toward it and send nothing; its recovery
// resolves it, stops the escalation and, with notify_on_resolve, tells only the people
// already called.
func TestInboundEventsOpenDeduplicateAndResolve(t *testing.T) {
	t.Parallel()
	f, it := newInboundFixture(t, true)
	ctx := context.Background()
	svc := f.d.Inbound()
	recs, err := svc.Receive(ctx, it, event("trigger", "node1::cpu", "critical"))
	if err != nil || len(recs) != 1 || recs[0].Outcome != inbound.OutcomeCreated || recs[0].AlertID == nil {
		t.Fatalf("first event: %+v, %v", recs, err)
	}
	id := *recs[0].AlertID
	for range 3 {
		recs, err := svc.Receive(ctx, it, event("trigger", "node1::cpu", "critical"))
		if err != nil || recs[0].Outcome != inbound.OutcomeDeduplicated || recs[0].AlertID == nil || *recs[0].AlertID != id {
			t.Fatalf("a duplicate: %+v, %v", recs, err)
		}
	}
	a := f.alert(t, id)
	if a.Source != "monitor" || a.DedupKey != "node1::cpu" || a.Severity != "critical" || a.EventCount != 4 || a.Labels["instance"] != "node1" {
		t.Fatalf("alert %+v", a)
	}
	notices := f.noticesTo(t, id)
	if len(notices["E2002"]) != 1 || !strings.Contains(notices["E2002"][0], "核心系统 CPU 过高") || len(notices) != 1 {
		t.Fatalf("notices %q, want one to E2002", notices)
	}
	recs, err = svc.Receive(ctx, it, event("resolve", "node1::cpu", "critical"))
	if err != nil || recs[0].Outcome != inbound.OutcomeResolved {
		t.Fatalf("recovery: %+v, %v", recs, err)
	}
	a = f.alert(t, id)
	if a.State != alert.AlertResolved || a.ResolvedBy != "monitor" || a.ResolvedVia != alert.AckViaSource {
		t.Fatalf("after the recovery: %+v", a)
	}
	if n := f.advance(t, time.Hour); n != 0 {
		t.Errorf("%d steps fired after the recovery", n)
	}
	notices = f.noticesTo(t, id)
	if len(notices["E2002"]) != 2 || !strings.Contains(notices["E2002"][1], "已恢复") || len(notices["E2001"]) != 0 {
		t.Errorf("notices after the recovery %q: want 已恢复 to E2002 only, nobody not yet called", notices)
	}
	// A recovery for no open alert is recorded and ignored; the key then opens anew.
	recs, err = svc.Receive(ctx, it, event("resolve", "node1::cpu", "critical"))
	if err != nil || recs[0].Outcome != inbound.OutcomeIgnored {
		t.Errorf("a second recovery: %+v, %v", recs, err)
	}
	recs, err = svc.Receive(ctx, it, event("trigger", "node1::cpu", "critical"))
	if err != nil || recs[0].Outcome != inbound.OutcomeCreated || *recs[0].AlertID == id {
		t.Errorf("firing again after the recovery: %+v, %v", recs, err)
	}
	events, err := svc.Events(ctx, "monitor")
	if err != nil || len(events) != 7 || events[0].Outcome != inbound.OutcomeCreated || events[6].Body == "" {
		t.Errorf("what came in: %d events, %v", len(events), err)
	}
}

// An event no route matches, with no default route, is recorded unrouted and opens
// nothing; a body that cannot be read is refused with the field named and recorded.
func TestInboundUnroutedAndRefused(t *testing.T) {
	t.Parallel()
	f, it := newInboundFixture(t, false)
	ctx := context.Background()
	svc := f.d.Inbound()
	recs, err := svc.Receive(ctx, it, event("trigger", "disk", "warning"))
	if err != nil || recs[0].Outcome != inbound.OutcomeUnrouted || recs[0].AlertID != nil {
		t.Fatalf("an unrouted event: %+v, %v", recs, err)
	}
	_, err = svc.Receive(ctx, it, []byte(`{"event_action":"trigger","severity":"critical","title":"x"}`))
	if fe, ok := errors.AsType[*kernel.FieldError](err); !ok || fe.Field != "dedup_key" {
		t.Fatalf("a body without its dedup key: %v", err)
	}
	events, err := svc.Events(ctx, "monitor")
	if err != nil || len(events) != 2 || events[0].Outcome != inbound.OutcomeRefused || !strings.Contains(events[0].Reason, "dedup_key") {
		t.Fatalf("what came in: %+v, %v", events, err)
	}
	if n := testenv.Count(t, f.store, "SELECT COUNT(*) FROM alerts"); n != 0 {
		t.Errorf("%d alerts opened", n)
	}
}

// Sixteen callers posting the same alert at once make one alert.
func TestInboundConcurrentDuplicatesMakeOneAlert(t *testing.T) {
	t.Parallel()
	f, it := newInboundFixture(t, false)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := f.d.Inbound().Receive(ctx, it, event("trigger", "db1::down", "critical")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := testenv.Count(t, f.store, "SELECT COUNT(*) FROM alerts WHERE dedup_key = 'db1::down'"); n != 1 {
		t.Fatalf("%d alerts for one dedup key", n)
	}
	if n := testenv.Count(t, f.store, "SELECT COUNT(*) FROM inbound_events WHERE outcome = 'created'"); n != 1 {
		t.Errorf("%d events recorded as created", n)
	}
}

// The tools' own payloads, posted as they send them (inbound/testdata): each firing
// alert opens one alert, the same body again opens none, and the recovery resolves the
// alerts it names and stops their escalation.
func TestInboundToolPayloads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ format, firing, resolved string }{
		{inbound.FormatAlertmanager, "alertmanager_firing.json", "alertmanager_resolved.json"},
		// Grafana's documented example is a firing one; its recovery is the same body with
		// every status resolved, as Grafana sends it.
		{inbound.FormatGrafana, "grafana_firing.json", ""},
		{inbound.FormatZabbix, "zabbix_problem.json", "zabbix_recovery.json"},
		{inbound.FormatEvents, "events_trigger.json", "events_resolve.json"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			f := newAlertFixture(t)
			ctx := context.Background()
			f.policy(t, alert.EscalationPolicy{Name: "night", Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}})
			it, _, err := f.d.Inbound().CreateIntegration(ctx, f.by, inbound.IntegrationInput{Name: "tool", Format: tc.format,
				DefaultRoute: &inbound.Route{Policy: "night", Platform: "sandbox", Recipients: []string{"E2002"}}})
			if err != nil {
				t.Fatal(err)
			}
			firing := readTestdata(t, tc.firing)
			var resolved []byte
			if tc.resolved == "" {
				resolved = bytes.ReplaceAll(firing, []byte(`"status": "firing"`), []byte(`"status": "resolved"`))
			} else {
				resolved = readTestdata(t, tc.resolved)
			}
			outcomes := func(body []byte) map[string]int {
				t.Helper()
				recs, err := f.d.Inbound().Receive(ctx, it, body)
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]int{}
				for _, r := range recs {
					out[r.Outcome]++
				}
				return out
			}
			events, err := inbound.Normalize(tc.format, firing, nil)
			if err != nil {
				t.Fatal(err)
			}
			firingKeys := map[string]bool{}
			for _, e := range events {
				if e.Status == inbound.StatusFiring {
					firingKeys[e.DedupKey] = true
				}
			}
			if got := outcomes(firing); got[inbound.OutcomeCreated] != len(firingKeys) || len(firingKeys) == 0 {
				t.Fatalf("firing: %v, want %d created", got, len(firingKeys))
			}
			if got := outcomes(firing); got[inbound.OutcomeCreated] != 0 || got[inbound.OutcomeDeduplicated] != len(firingKeys) {
				t.Fatalf("the same body again: %v, want %d deduplicated", got, len(firingKeys))
			}
			ended, err := inbound.Normalize(tc.format, resolved, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for _, e := range ended {
				if e.Status == inbound.StatusResolved && firingKeys[e.DedupKey] {
					want++
				}
			}
			got := outcomes(resolved)
			if got[inbound.OutcomeResolved] != want || want == 0 {
				t.Fatalf("recovery: %v, want %d resolved", got, want)
			}
			// Steps fire only for the alerts still firing, and those the recovery's body
			// opened.
			if n, open := f.advance(t, time.Hour), len(firingKeys)-want+got[inbound.OutcomeCreated]; n != open {
				t.Errorf("%d steps fired after the recovery, want %d", n, open)
			}
		})
	}
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "inbound", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A heartbeat of working days: a missed ping on a workday opens one alert through its
// route, the next ping resolves it; the same hour on a 国庆 day (a holiday) opens
// nothing, and a make-up Saturday counts as a working day.
func TestHeartbeats(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "night", Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}})
	err := f.store.Duty().SetHolidays(ctx, []duty.Holiday{{Date: "2026-11-26", Kind: duty.HolidayOff, Name: "国庆"},
		{Date: "2026-11-28", Kind: duty.HolidayWorkday, AsWeekday: new(4), Name: "国庆调休"}})
	if err != nil {
		t.Fatal(err)
	}
	svc := f.d.Inbound()
	// Wednesday 2026-11-25 10:00: a daily job, expected by Thursday 10:00 — a holiday.
	hb, token, err := svc.CreateHeartbeat(ctx, f.by, inbound.HeartbeatInput{Name: "eod-batch", Interval: "24h", Grace: "5m",
		Days: inbound.DaysWorkdays, Route: inbound.Route{Policy: "night", Platform: "sandbox", Recipients: []string{"E2002"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC); !hb.DueAt.Equal(want) {
		t.Fatalf("due %s, want %s: Thursday is a holiday", hb.DueAt, want)
	}
	check := func(at time.Time) int {
		t.Helper()
		n, err := svc.CheckHeartbeats(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := check(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)); n != 0 {
		t.Fatalf("%d alerts on the holiday", n)
	}
	if n := check(time.Date(2026, 11, 27, 10, 3, 0, 0, time.UTC)); n != 0 {
		t.Fatalf("%d alerts within the grace", n)
	}
	if n := check(time.Date(2026, 11, 27, 10, 6, 0, 0, time.UTC)); n != 1 {
		t.Fatalf("%d alerts for the missed ping, want 1", n)
	}
	if n := check(time.Date(2026, 11, 27, 10, 7, 0, 0, time.UTC)); n != 0 {
		t.Fatalf("a second check opened %d more", n)
	}
	missed, err := svc.Heartbeat(ctx, "eod-batch")
	if err != nil || missed.AlertID == nil {
		t.Fatalf("heartbeat %+v, %v", missed, err)
	}
	if _, err := svc.Ping(ctx, "eod-batch", "wrong"); !errors.Is(err, inbound.ErrToken) {
		t.Errorf("a ping with a wrong token: %v", err)
	}
	f.mu.Lock()
	f.now = time.Date(2026, 11, 27, 10, 20, 0, 0, time.UTC)
	f.mu.Unlock()
	pinged, err := svc.Ping(ctx, "eod-batch", token)
	if err != nil || pinged.AlertID != nil {
		t.Fatalf("ping: %+v, %v", pinged, err)
	}
	if a := f.alert(t, *missed.AlertID); a.State != alert.AlertResolved || a.ResolvedVia != alert.AckViaSource || a.Source != "heartbeat:eod-batch" {
		t.Errorf("the missed ping's alert after the ping: %+v", a)
	}
	// Friday's ping expects the next on Saturday the 28th, a make-up workday.
	if want := time.Date(2026, 11, 28, 10, 20, 0, 0, time.UTC); !pinged.DueAt.Equal(want) {
		t.Errorf("next due %s, want %s (a make-up workday)", pinged.DueAt, want)
	}
}

// A route's template sees the event: its title and, as {{.labels.<name>}}, its labels;
// a template that needs a label the event lacks refuses the event, saying why.
func TestInboundRouteTemplate(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "night", Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}})
	if _, err := f.d.Templates().CreateTemplate(ctx, f.by, templates.TemplateInput{Name: "alert", Body: "{{.title}} @ {{.labels.instance}} ({{.severity}})",
		Variables: []string{"title", "labels.instance", "severity"}}); err != nil {
		t.Fatal(err)
	}
	it, _, err := f.d.Inbound().CreateIntegration(ctx, f.by, inbound.IntegrationInput{Name: "monitor", Format: inbound.FormatEvents,
		DefaultRoute: &inbound.Route{Policy: "night", Template: "alert", Platform: "sandbox", Recipients: []string{"E2002"}}})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := f.d.Inbound().Receive(ctx, it, event("trigger", "node1::cpu", "critical"))
	if err != nil || recs[0].Outcome != inbound.OutcomeCreated {
		t.Fatalf("event: %+v, %v", recs, err)
	}
	notices := f.noticesTo(t, *recs[0].AlertID)
	if len(notices["E2002"]) != 1 || !strings.HasPrefix(notices["E2002"][0], "核心系统 CPU 过高 @ node1 (critical)") {
		t.Fatalf("notices %q", notices)
	}
	recs, err = f.d.Inbound().Receive(ctx, it, []byte(`{"event_action":"trigger","dedup_key":"k2","title":"no instance"}`))
	if err != nil || recs[0].Outcome != inbound.OutcomeRefused || !strings.Contains(recs[0].Reason, "labels.instance") {
		t.Errorf("an event without the label the template needs: %+v, %v", recs, err)
	}
}

// Without a template the notice is Herald's own, in the integration's language.
func TestInboundBuiltInNoticeLanguage(t *testing.T) {
	t.Parallel()
	for lang, want := range map[string][]string{
		"":   {"【严重】核心系统 CPU 过高", "来源：monitor"},
		"en": {"[critical] 核心系统 CPU 过高", "Source: monitor"},
	} {
		t.Run("language "+lang, func(t *testing.T) {
			t.Parallel()
			f := newAlertFixture(t)
			ctx := context.Background()
			f.policy(t, alert.EscalationPolicy{Name: "night", Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}})
			it, _, err := f.d.Inbound().CreateIntegration(ctx, f.by, inbound.IntegrationInput{Name: "monitor", Format: inbound.FormatEvents, Language: lang,
				DefaultRoute: &inbound.Route{Policy: "night", Platform: "sandbox", Recipients: []string{"E2002"}}})
			if err != nil {
				t.Fatal(err)
			}
			recs, err := f.d.Inbound().Receive(ctx, it, event("trigger", "node1::cpu", "critical"))
			if err != nil || recs[0].AlertID == nil {
				t.Fatalf("event: %+v, %v", recs, err)
			}
			notice := f.noticesTo(t, *recs[0].AlertID)["E2002"]
			for _, w := range want {
				if len(notice) != 1 || !strings.Contains(notice[0], w) {
					t.Errorf("notice %q lacks %q", notice, w)
				}
			}
		})
	}
}

// A custom mapping with a value map, on the documented payload: a firing event opens an
// alert, its "ok" (mapped to resolved) resolves it in the same body, an unknown level
// opens one as a warning; posted again, the resolved key opens anew and the other is a
// duplicate.
func TestInboundCustomMapping(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "night", Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}})
	var m inbound.Mapping
	if err := json.Unmarshal(readTestdata(t, "custom_mapping.json"), &m); err != nil {
		t.Fatal(err)
	}
	it, _, err := f.d.Inbound().CreateIntegration(ctx, f.by, inbound.IntegrationInput{Name: "pay", Format: inbound.FormatCustom,
		Mapping: m.Fields, ValueMap: m.Values, DefaultRoute: &inbound.Route{Policy: "night", Platform: "sandbox", Recipients: []string{"E2002"}}})
	if err != nil {
		t.Fatal(err)
	}
	body := readTestdata(t, "custom_payload.json")
	outcomes := func() []string {
		t.Helper()
		recs, err := f.d.Inbound().Receive(ctx, it, body)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			out = append(out, r.Outcome)
		}
		return out
	}
	if diff := cmp.Diff([]string{"created", "resolved", "created"}, outcomes()); diff != "" {
		t.Fatalf("first post (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"created", "resolved", "deduplicated"}, outcomes()); diff != "" {
		t.Fatalf("second post (-want +got):\n%s", diff)
	}
	alerts, err := alert.Of(f.store).Alerts(ctx, alert.AlertFilter{Source: "pay", Severity: inbound.SeverityWarning}, 10)
	if err != nil || len(alerts) != 1 || alerts[0].EventCount != 2 {
		t.Errorf("the unknown level's alert: %+v, %v", alerts, err)
	}
}
