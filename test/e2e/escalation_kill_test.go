package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/alert"
	"herald/audit"
	"herald/dispatch"
	"herald/simulator"
)

// killAlerts is how many alerts TestKilledWorkerFiresEveryStepOnce opens: enough that
// their second steps take a while to fire, so that the kill lands among them (the test
// fails when every one fired before it), and twice as many in the long runs.
var killAlerts = fullSize(150, 300)

// killStepWait is the first step's wait in TestKilledWorkerFiresEveryStepOnce.
const killStepWait = 5 * time.Second

// TestKilledWorkerFiresEveryStepOnce opens alerts under a two-step policy whose first
// step waits 5 s (HERALD_TEST_KNOBS step_wait; the production minimum is 30 s, and what
// the test proves does not depend on the wait) while two worker processes of the real
// binary run, and kills one of them with SIGKILL while the second steps are firing: whatever
// it held — step tasks taken from Redis, timers waiting for a step's due time,
// transactions not committed — dies with it, and it is started again. On the database
// afterwards every second step has fired, exactly once (one notice to its person per
// alert, one audit entry per step), and the recovery poll fired the steps the dead
// worker held within seconds of their due time, long before Asynq would hand its tasks
// back.
func TestKilledWorkerFiresEveryStepOnce(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	if env["HERALD_MYSQL_DSN"] == "" || env["HERALD_REDIS_URL"] == "" {
		t.Skip("needs HERALD_TEST_MYSQL_DSN and HERALD_TEST_REDIS_URL: worker processes share MySQL and Redis")
	}
	env["HERALD_TEST_KNOBS"] = "step_wait=" + killStepWait.String()
	rig := newFaultRig(t, env, 2, simulator.Faults{})
	rig.H.Stop() // it migrated and seeded; from here the children are the only workers
	workers := startWorkers(t, env, 2, "HERALD_WORKER_CONCURRENCY=20")
	intake := startHeraldAs(t, env, "web")
	store, d := intake.App.Store, intakeOf(t, intake.App)
	ctx := context.Background()
	first, second := rig.People[0], rig.People[1]
	if _, err := d.Alerts().CreatePolicy(ctx, audit.System("test"), alert.EscalationPolicy{Name: "kill", Steps: []alert.PolicyStep{
		{Targets: []string{first}, Wait: killStepWait.String()}, {Targets: []string{second}, Wait: "1h"}}}); err != nil {
		t.Fatal(err)
	}
	// Nobody named: step 1 fires as each alert opens, here; step 2 comes due 5 s later,
	// on the workers, spread over the time the opening took. (Its own wait is long, so
	// that no alert is exhausted before the test ends.)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if _, err := d.Submit(ctx, dispatch.Request{Source: "api", Actor: "test", Account: rig.Account.Name,
					Text: fmt.Sprintf("核心系统告警 %d", i), Ack: &dispatch.AckRequest{Policy: "kill"}}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for i := range killAlerts {
		next <- i
	}
	close(next)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	secondFired := func() int {
		var n int
		if err := store.SQL().QueryRow("SELECT COUNT(*) FROM alert_steps WHERE n = 2 AND fired_at IS NOT NULL").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(time.Minute)
	for secondFired() < killAlerts/4 {
		if time.Now().After(deadline) {
			t.Fatalf("a minute on, %d of %d second steps fired", secondFired(), killAlerts)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := workers[0].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	_ = workers[0].Wait()
	atKill := secondFired()
	if atKill == killAlerts {
		t.Fatal("every second step fired before the kill; the test proves nothing")
	}
	// The killed worker comes back, as its supervisor would restart it: it and the
	// survivor race for the overdue steps, and the claim lets one of them fire each.
	startWorkers(t, env, 1, "HERALD_WORKER_CONCURRENCY=20")
	for secondFired() < killAlerts {
		if time.Since(killedAt) > 30*time.Second {
			t.Fatalf("30 s after the kill %d of %d second steps fired", secondFired(), killAlerts)
		}
		time.Sleep(50 * time.Millisecond)
	}
	recovered := time.Since(killedAt)

	// Each step fired once: one step row each, one notice per person per alert (step 1
	// calls the first person, step 2 the second), one audit entry per step.
	var rows, audits int
	for q, into := range map[string]*int{
		"SELECT COUNT(*) FROM alert_steps WHERE n IN (1, 2)":         &rows,
		"SELECT COUNT(*) FROM audit_log WHERE action = 'alert.step'": &audits,
	} {
		if err := store.SQL().QueryRow(q).Scan(into); err != nil {
			t.Fatal(err)
		}
	}
	if rows != 2*killAlerts || audits != 2*killAlerts {
		t.Errorf("%d alerts of two steps: %d step rows, %d step audit entries; want %d of each", killAlerts, rows, audits, 2*killAlerts)
	}
	notices, err := noticesPerPerson(store)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{first: killAlerts, second: killAlerts}, notices); diff != "" {
		t.Errorf("notices per person: a step fired twice or never (-want +got):\n%s", diff)
	}
	// How late each step fired: the second steps the dead worker held were fired by the
	// survivor's poll, within seconds (Asynq hands a dead worker's task back after 30 s
	// or more).
	late, err := stepLateness(store)
	if err != nil {
		t.Fatal(err)
	}
	worst := slices.Max(late)
	if worst > 10*time.Second {
		t.Errorf("a step fired %s after its due time, want the recovery poll within seconds", worst.Round(time.Millisecond))
	}
	t.Logf("killed one of two workers with %d of %d second steps fired; all fired %s after the kill, the latest %s after its due time",
		atKill, killAlerts, recovered.Round(10*time.Millisecond), worst.Round(time.Millisecond))
}
