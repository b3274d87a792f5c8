package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"herald/alert"
	"herald/delivery"
	"herald/inbound"
	"herald/incident"
	"herald/internal/testenv"
)

// nodeDown is an Alertmanager body of NodeDown alerts in cluster on instances
// i<from>…i<to>, firing or resolved.
func nodeDown(t *testing.T, status, cluster string, from, to int) []byte {
	t.Helper()
	type amAlert struct {
		Status      string            `json:"status"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		StartsAt    string            `json:"startsAt"`
		Fingerprint string            `json:"fingerprint"`
	}
	body := struct {
		Version string    `json:"version"`
		Status  string    `json:"status"`
		Alerts  []amAlert `json:"alerts"`
	}{Version: "4", Status: status}
	for i := from; i <= to; i++ {
		instance := fmt.Sprintf("i%d", i)
		body.Alerts = append(body.Alerts, amAlert{Status: status, StartsAt: "2026-11-25T02:00:00Z",
			Labels:      map[string]string{"alertname": "NodeDown", "cluster": cluster, "instance": instance, "severity": "critical"},
			Annotations: map[string]string{"summary": "节点 " + instance + " 失联"}, Fingerprint: cluster + "-" + instance})
	}
	out, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// messagesTo counts the messages to each person, every alert's.
func (f *alertFixture) messagesTo(t *testing.T, like string) map[string]int {
	t.Helper()
	rows, err := f.store.SQL().Query(`SELECT r.external_id FROM messages m JOIN recipients r ON r.id = m.recipient_id
		WHERE m.content LIKE ?`, "%"+like+"%")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var ext string
		if err := rows.Scan(&ext); err != nil {
			t.Fatal(err)
		}
		out[ext]++
	}
	return out
}

// moveClock moves the fixture's clock on without firing anything.
func (f *alertFixture) moveClock(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// A NodeDown storm in one cluster, a hundred alerts within ten seconds, makes one
// incident: the first alert escalates (the people on duty hear of it once) and the one
// that brings the incident to fifty sends the one storm notice; the rest send nothing.
// Another cluster's alert is an incident of its own. Taking the incident takes its
// alerts; once all have recovered the incident resolves by itself.
func TestIncidentGathersAStorm(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "core", Steps: []alert.PolicyStep{{Targets: []string{"on_duty"}, Wait: "10m"},
		{Targets: []string{"E2001"}, Wait: "10m"}}})
	it, _, err := f.d.Inbound().CreateIntegration(ctx, f.by, inbound.IntegrationInput{Name: "prometheus", Format: inbound.FormatAlertmanager,
		DefaultRoute: &inbound.Route{Policy: "core", Platform: "sandbox",
			Rules: incident.Rules{GroupBy: []string{"alertname", "cluster"}, GroupWindow: "5m", StormThreshold: 50}}})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 10 {
		recs, err := f.d.Inbound().Receive(ctx, it, nodeDown(t, "firing", "sh-core", k*10+1, k*10+10))
		if err != nil || len(recs) != 10 || recs[0].Outcome != inbound.OutcomeCreated {
			t.Fatalf("post %d: %+v, %v", k, recs, err)
		}
		f.moveClock(time.Second)
	}
	if _, err := f.d.Inbound().Receive(ctx, it, nodeDown(t, "firing", "bj", 1, 1)); err != nil {
		t.Fatal(err)
	}
	coord := incident.NewService(f.store, f.d.Alerts(), f.clock)
	list, err := coord.List(ctx, incident.Filter{}, 10)
	if err != nil || len(list) != 2 {
		t.Fatalf("incidents: %+v, %v", list, err)
	}
	in := list[1]
	if in.GroupKey != "alertname=NodeDown,cluster=sh-core" || in.AlertCount != 100 || in.StormAt == nil || in.State != incident.StateOpen {
		t.Fatalf("the storm's incident: %+v", in)
	}
	// Wednesday's people on duty, E1003 and E1004: the incident's notice and the storm.
	if got := f.messagesTo(t, ""); fmt.Sprint(got) != fmt.Sprint(map[string]int{"E1003": 3, "E1004": 3}) {
		t.Errorf("notices %v: want two each for the storm and one each for bj", got)
	}
	if got := f.messagesTo(t, "告警风暴：50 条"); len(got) != 2 || got["E1003"] != 1 {
		t.Errorf("storm notices %v, want one each", got)
	}
	if got := f.messagesTo(t, "及另外 45 条"); len(got) != 2 {
		t.Errorf("the storm notice lists the first alerts then the rest: %v", got)
	}
	_, alerts, err := coord.Get(ctx, in.ID)
	if err != nil || len(alerts) != 100 || *in.AlertID != alerts[0].ID {
		t.Fatalf("its alerts: %d, %v", len(alerts), err)
	}
	for _, a := range alerts[1:] {
		if steps, _ := alert.Of(f.store).AlertSteps(ctx, a.ID); len(steps) != 0 {
			t.Fatalf("alert %d joined the incident but escalates: %+v", a.ID, steps)
		}
	}
	// The incident's next step lists its alerts.
	f.advance(t, 10*time.Minute)
	if step := f.noticesTo(t, *in.AlertID)["E2001"]; len(step) != 1 || !strings.Contains(step[0], fmt.Sprintf("事件 #%d：共 100 条告警", in.ID)) ||
		!strings.Contains(step[0], "失联\n· 【严重】节点 i2 失联\n") || !strings.Contains(step[0], "及另外 95 条") {
		t.Errorf("the incident's second step: %q", step)
	}
	// Taking the incident takes every alert of it, and its escalation stops.
	if _, err := coord.Acknowledge(ctx, f.by, in.ID, "", alert.AckViaAPI, ""); !isField(err, "by") {
		t.Errorf("taking it through the API without naming who: %v", err)
	}
	res, err := coord.Acknowledge(ctx, f.by, in.ID, "", alert.AckViaConsole, "机房断电")
	if err != nil || res.Incident.State != incident.StateAcknowledged || res.Already {
		t.Fatalf("acknowledge: %+v, %v", res, err)
	}
	if n := testenv.Count(t, f.store, "SELECT COUNT(*) FROM alerts WHERE incident_id = ? AND state = 'acknowledged'", in.ID); n != 100 {
		t.Errorf("%d of 100 alerts acknowledged", n)
	}
	f.advance(t, time.Hour)
	if steps := f.steps(t, *in.AlertID); len(steps) != 2 {
		t.Errorf("the incident's steps after it was taken: %v", steps)
	}
	// All but one recover: still acknowledged; the last: resolved, by the integration.
	if _, err := f.d.Inbound().Receive(ctx, it, nodeDown(t, "resolved", "sh-core", 1, 99)); err != nil {
		t.Fatal(err)
	}
	if in, _, _ := coord.Get(ctx, in.ID); in.State != incident.StateAcknowledged {
		t.Errorf("with one alert still firing the incident is %s", in.State)
	}
	if _, err := f.d.Inbound().Receive(ctx, it, nodeDown(t, "resolved", "sh-core", 100, 100)); err != nil {
		t.Fatal(err)
	}
	if in, _, _ := coord.Get(ctx, in.ID); in.State != incident.StateResolved || in.ResolvedBy != "prometheus" || in.OpenKey != nil {
		t.Errorf("after every alert recovered: %+v", in)
	}
	if n := testenv.Count(t, f.store, "SELECT COUNT(*) FROM audit_log WHERE action = 'incident.resolve'"); n != 1 {
		t.Errorf("%d incident.resolve entries", n)
	}
	// Past the window a new alert of the key opens a new incident.
	f.moveClock(10 * time.Minute)
	if _, err := f.d.Inbound().Receive(ctx, it, nodeDown(t, "firing", "sh-core", 1, 1)); err != nil {
		t.Fatal(err)
	}
	if list, _ := coord.List(ctx, incident.Filter{State: incident.StateOpen}, 10); len(list) != 2 {
		t.Errorf("open incidents after the window: %d, want bj's and the new one", len(list))
	}
}

// A dedup key that opens and recovers five times within thirty minutes is flapping:
// the fifth opening sends one 抖动 notice instead of its own, later ones nothing, until
// the key has been quiet for the window.
func TestFlappingKeySendsOneNotice(t *testing.T) {
	t.Parallel()
	f, it := newInboundFixture(t, false)
	ctx := context.Background()
	cycle := func() int64 {
		t.Helper()
		recs, err := f.d.Inbound().Receive(ctx, it, event("trigger", "db1::conn", "critical"))
		if err != nil || recs[0].AlertID == nil {
			t.Fatalf("firing: %+v, %v", recs, err)
		}
		f.moveClock(time.Minute)
		if _, err := f.d.Inbound().Receive(ctx, it, event("resolve", "db1::conn", "critical")); err != nil {
			t.Fatal(err)
		}
		f.moveClock(time.Minute)
		return *recs[0].AlertID
	}
	var ids []int64
	for range 8 {
		ids = append(ids, cycle())
	}
	if got := f.messagesTo(t, "抖动"); got["E2002"] != 1 || len(got) != 1 {
		t.Errorf("抖动 notices %v, want one to E2002", got)
	}
	if got := f.messagesTo(t, ""); got["E2002"] != 5 {
		t.Errorf("notices %v: want four of the alert and one 抖动", got)
	}
	for i, id := range ids {
		if a := f.alert(t, id); a.Flapping != (i >= 4) {
			t.Errorf("opening %d: flapping %v", i+1, a.Flapping)
		}
	}
	// Stable for the window: the key notifies again.
	f.moveClock(31 * time.Minute)
	id := cycle()
	if a := f.alert(t, id); a.Flapping || len(f.noticesTo(t, id)["E2002"]) != 1 {
		t.Errorf("after a quiet window: %+v, notices %v", a, f.noticesTo(t, id))
	}
}

// A route's max_notices_per_hour holds under an escalation that calls every thirty
// seconds: the alert's opening notice and its steps together send no more than the cap
// in the hour that began with its first notice; the step that would pass it waits for
// the hour to end, saying so once; then the escalation goes on.
func TestNoticeCapHoldsUnderAFastEscalation(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	loop := make([]alert.PolicyStep, 10)
	for i := range loop {
		loop[i] = alert.PolicyStep{Targets: []string{"E2001"}, Wait: "30s"}
	}
	f.policy(t, alert.EscalationPolicy{Name: "loop", Repeat: 5, Steps: loop})
	it, _, err := f.d.Inbound().CreateIntegration(ctx, f.by, inbound.IntegrationInput{Name: "monitor", Format: inbound.FormatEvents,
		Routes: []inbound.Route{{Matchers: []delivery.Matcher{{Name: "severity", Value: "critical"}}, Policy: "loop", Platform: "sandbox",
			Recipients: []string{"E2002"}, Rules: incident.Rules{MaxNoticesPerHour: 4}}}})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := f.d.Inbound().Receive(ctx, it, event("trigger", "core::tps", "critical"))
	if err != nil || recs[0].AlertID == nil {
		t.Fatalf("%+v, %v", recs, err)
	}
	id := *recs[0].AlertID
	for range 100 { // fifty minutes
		f.advance(t, 30*time.Second)
	}
	notices := f.noticesTo(t, id)
	if len(notices["E2002"]) != 1 || len(notices["E2001"]) != 3 {
		t.Errorf("notices in the first hour %v: want the opening one and three steps'", notices)
	}
	_, steps, err := f.d.Alerts().Alert(ctx, f.by, id)
	if err != nil || len(steps) != 4 || steps[3].FiredAt != nil || steps[3].SkippedReason != alert.SkipNoticeCap ||
		!steps[3].DueAt.Equal(f.alert(t, id).OpenedAt.Add(time.Hour)) {
		t.Fatalf("steps: %+v, %v; want the fourth waiting for the hour to end", steps, err)
	}
	if n := testenv.Count(t, f.store, "SELECT COUNT(*) FROM audit_log WHERE action = 'alert.notice_cap'"); n != 1 {
		t.Errorf("the cap reached is said %d times", n)
	}
	f.advance(t, 10*time.Minute) // the hour is over: the waiting step calls
	if n := len(f.noticesTo(t, id)["E2001"]); n != 4 {
		t.Errorf("%d step notices once the next hour began, want 3 then 1 more", n)
	}
	if got := f.steps(t, id); len(got) != 4 || got[3] != "1.4 E2001" {
		t.Errorf("steps after the hour: %v", got)
	}
}

// A route's noise settings out of range are refused, naming the field.
func TestIncidentRulesRefused(t *testing.T) {
	t.Parallel()
	f := newAlertFixture(t)
	ctx := context.Background()
	f.policy(t, alert.EscalationPolicy{Name: "core", Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}})
	for _, tc := range []struct {
		rules incident.Rules
		field string
	}{
		{incident.Rules{GroupBy: []string{}, GroupWindow: "5m"}, "routes[0].group_by"},
		{incident.Rules{GroupBy: []string{"alertname", " "}}, "routes[0].group_by[1]"},
		{incident.Rules{GroupBy: []string{"alertname"}, GroupWindow: "10s"}, "routes[0].group_window"},
		{incident.Rules{GroupBy: []string{"alertname"}, GroupWindow: "25h"}, "routes[0].group_window"},
		{incident.Rules{GroupBy: []string{"alertname"}, GroupWindow: "soon"}, "routes[0].group_window"},
		{incident.Rules{StormThreshold: 50}, "routes[0].group_by"},
		{incident.Rules{FlapCount: 1}, "routes[0].flap_count"},
		{incident.Rules{FlapWindow: "10s"}, "routes[0].flap_window"},
		{incident.Rules{MaxNoticesPerHour: -1}, "routes[0].max_notices_per_hour"},
	} {
		_, _, err := f.d.Inbound().CreateIntegration(ctx, f.by, inbound.IntegrationInput{Name: "bad", Format: inbound.FormatAlertmanager,
			Routes: []inbound.Route{{Policy: "core", Platform: "sandbox", Rules: tc.rules}}})
		if !isField(err, tc.field) {
			t.Errorf("%+v: %v, want a field error on %s", tc.rules, err, tc.field)
		}
	}
	if n := testenv.Count(t, f.store, "SELECT COUNT(*) FROM integrations"); n != 0 {
		t.Errorf("%d integrations written", n)
	}
}
