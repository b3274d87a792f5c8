package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"herald/directory"
	"herald/dispatch"
	"herald/internal/app"
	"herald/models"
	"herald/sending"
	"herald/simulator"
)

// FaultRig is Herald plus a simulator reachable over real HTTP, with one Tianyuan
// account pointing at it and n branch recipients (who always receive).
type FaultRig struct {
	H *Running
	// Sim is the in-test simulator; nil when the simulator runs as a process of its own
	// at SimURL.
	Sim      *simulator.Simulator
	SimURL   string
	Account  *sending.Account
	People   []string
	Dispatch *dispatch.Dispatcher
}

// NewFaultRig is Herald with a Tianyuan account pointing at an in-test simulator that
// answers with the faults given, and n branch recipients.
func NewFaultRig(t testing.TB, env map[string]string, n int, faults simulator.Faults, configure ...func(*app.App)) *FaultRig {
	t.Helper()
	sim := simulator.NewWithOptions(faults, simulator.Options{Seed: 42})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	rig := NewRigAt(t, env, n, srv.URL, configure...)
	rig.Sim = sim
	return rig
}

// NewRigAt is Herald with a Tianyuan account pointing at the simulator at simURL and n
// branch recipients.
func NewRigAt(t testing.TB, env map[string]string, n int, simURL string, configure ...func(*app.App)) *FaultRig {
	t.Helper()
	h := StartHerald(t, env, append([]func(*app.App){SweepAtOnce}, configure...)...)
	ctx := context.Background()
	acct := &sending.Account{Name: "ty-fault", Platform: "tianyuan", Enabled: true, AllowPrivateNetwork: true,
		MaxAttempts: 3, Healthy: true, Config: map[string]string{"base_url": simURL + "/tianyuan", "path": "/messages", "token": "t0ken"}}
	if err := h.App.Store.Sending().SaveAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	rig := &FaultRig{H: h, SimURL: simURL, Account: acct}
	list := make([]directory.Recipient, n)
	for i := range list {
		id := fmt.Sprintf("F%05d", i)
		list[i] = directory.Recipient{ExternalID: id, Name: "Fault " + id, OrgType: directory.Branch, TianyuanID: "ty_" + id, Active: true}
		rig.People = append(rig.People, id)
	}
	if _, err := h.App.Store.Directory().UpsertRecipients(ctx, list); err != nil {
		t.Fatal(err)
	}
	rig.Dispatch = IntakeOf(t, h.App)
	return rig
}

// Submit sends one text message to every rig recipient, in requests of 1,000.
func (r *FaultRig) Submit(t testing.TB) []string {
	t.Helper()
	var ids []string
	for start := 0; start < len(r.People); start += 1000 {
		res, err := r.Dispatch.Submit(context.Background(), dispatch.Request{Source: "api", Actor: "test",
			Account: r.Account.Name, Recipients: r.People[start:min(start+1000, len(r.People))], Text: "fault run"})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Messages {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// StatusCounts counts the rig account's messages by status.
func (r *FaultRig) StatusCounts(t testing.TB) map[models.Status]int {
	t.Helper()
	rows, err := r.H.App.Store.SQL().Query("SELECT status, COUNT(*) FROM messages WHERE account_id = ? GROUP BY status", r.Account.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[models.Status]int{}
	for rows.Next() {
		var s models.Status
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		out[s] = n
	}
	return out
}

// WaitTerminal waits until every message is sent or stopped, sweeping now and then as
// the scheduler would, and fails after the timeout.
func (r *FaultRig) WaitTerminal(t testing.TB, total int, timeout time.Duration) map[models.Status]int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	lastSweep := time.Now()
	for {
		c := r.StatusCounts(t)
		if c[models.StatusSent]+c[models.StatusStopped] == total {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s not every message is final: %v", timeout, c)
		}
		if time.Since(lastSweep) > 5*time.Second {
			if _, err := r.Sweep(); err != nil {
				t.Logf("sweep: %v", err)
			}
			lastSweep = time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Deliveries is what the simulator recorded, asked over its control API when it runs as
// a process of its own.
func (r *FaultRig) Deliveries(t testing.TB) []simulator.Delivery {
	t.Helper()
	if r.Sim != nil {
		return r.Sim.Deliveries()
	}
	resp, err := http.Get(r.SimURL + "/_sim/deliveries")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []simulator.Delivery
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("simulator deliveries: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("simulator deliveries: %v", err)
	}
	return out
}

// IntakeOf returns an intake of its own on a running Herald's store and queue: no shared
// account cache, no dashboard counters. It honours the process's step_wait knob.
func IntakeOf(t testing.TB, a *app.App) *dispatch.Dispatcher {
	t.Helper()
	d, err := dispatch.NewDispatcher(dispatch.Config{Store: a.Store, Enqueuer: a.Enqueuer, Log: a.Log, Location: a.Config.Location,
		StepWait: a.Config.Knobs.StepWait})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Sweep re-enqueues the due messages now, as the scheduler's sweeper does.
func (r *FaultRig) Sweep() (int, error) {
	sweeper, err := r.H.App.Sweeper()
	if err != nil {
		return 0, err
	}
	return sweeper.Sweep(context.Background())
}

// CheckNoLoss asserts the invariants of a finished run: every message sent or stopped,
// none above its attempt limit, every sent message in the simulator's deliveries.
func (r *FaultRig) CheckNoLoss(t testing.TB, ids []string) (duplicates int) {
	t.Helper()
	delivered := map[string]int{}
	for _, d := range r.Deliveries(t) {
		delivered[d.RequestID]++
	}
	for _, id := range ids {
		m, err := r.H.App.Store.MessageByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Status != models.StatusSent && m.Status != models.StatusStopped:
			t.Errorf("message %s ended %s", id, m.Status)
		case m.Attempts > m.MaxAttempts:
			t.Errorf("message %s used %d attempts, limit %d", id, m.Attempts, m.MaxAttempts)
		case m.Status == models.StatusSent && delivered[id] == 0:
			t.Errorf("message %s is sent but the simulator never recorded it", id)
		}
		if delivered[id] > 1 {
			duplicates += delivered[id] - 1
		}
	}
	return duplicates
}

// SplitRolesMidRun starts Herald as an operator splits it (two worker processes, a
// scheduler and a web process, on MySQL and Redis), submits n messages and returns once
// 15 % of them are sent, with the rig pointed at the web process. Every process runs
// with knobs as HERALD_TEST_KNOBS (none when empty).
func SplitRolesMidRun(t testing.TB, n int, knobs string) (*FaultRig, []*Process, []string) {
	t.Helper()
	env := TestEnv(t)
	if env["HERALD_MYSQL_DSN"] == "" || env["HERALD_REDIS_URL"] == "" {
		t.Skip("needs HERALD_TEST_MYSQL_DSN and HERALD_TEST_REDIS_URL: split roles share MySQL and Redis")
	}
	if knobs != "" {
		env["HERALD_TEST_KNOBS"] = knobs
	}
	rig := NewFaultRig(t, env, n, simulator.Faults{Latency: simulator.Duration(20 * time.Millisecond)})
	rig.H.Stop() // it migrated and seeded; from here the children are the only workers
	workers := StartWorkers(t, env, 2, "HERALD_WORKER_CONCURRENCY=20")
	StartHeraldAs(t, env, "scheduler")
	intake := StartHeraldAs(t, env, "web")
	rig.Dispatch = IntakeOf(t, intake.App)
	rig.H = intake
	// Every worker must be up before the messages go in: a worker stopped while it still
	// starts up holds nothing, and its stop would prove nothing.
	started := time.Now().Add(time.Minute)
	for !allLogged(workers, `"msg":"herald started"`) {
		if time.Now().After(started) {
			t.Fatal("a minute after their start, not every worker has said it started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	ids := rig.Submit(t)
	deadline := time.Now().Add(time.Minute)
	for rig.StatusCounts(t)[models.StatusSent] < n*15/100 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return rig, workers, ids
}

// allLogged reports whether every one of workers has logged s.
func allLogged(workers []*Process, s string) bool {
	for _, w := range workers {
		if !w.Logged(s) {
			return false
		}
	}
	return true
}

// Killed is what KillWorkerMidRun measured.
type Killed struct {
	Recovered           time.Duration // from the SIGKILL until every message was final
	Duplicates, Unknown int           // deliveries made twice; messages with an unknown attempt
}

// KillWorkerMidRun kills one of two worker processes with SIGKILL while they send n
// messages and waits up to bound for every message to be sent, checking that nothing is
// lost and that every duplicate delivery shows as an unknown attempt.
func KillWorkerMidRun(t testing.TB, n int, bound time.Duration, knobs string) Killed {
	rig, workers, ids := SplitRolesMidRun(t, n, knobs)
	if err := workers[0].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = workers[0].Wait()
	atKill := rig.StatusCounts(t)
	t.Logf("killed one of two workers at %v", atKill)
	if atKill[models.StatusSent] == len(ids) {
		t.Fatalf("the workers finished before one was killed; the test proves nothing")
	}
	for {
		c := rig.StatusCounts(t)
		if c[models.StatusSent]+c[models.StatusStopped] == len(ids) {
			break
		}
		if time.Since(start) > bound {
			t.Fatalf("%s after the kill not every message is final: %v", bound, c)
		}
		time.Sleep(100 * time.Millisecond)
	}
	k := Killed{Recovered: time.Since(start)}
	counts := rig.StatusCounts(t)
	k.Duplicates = rig.CheckNoLoss(t, ids)
	if counts[models.StatusSent] != len(ids) {
		t.Errorf("after the kill: %v, want all %d sent", counts, len(ids))
	}
	unknown := rig.UnknownAttempts(t)
	k.Unknown = len(unknown)
	delivered := map[string]int{}
	for _, d := range rig.Deliveries(t) {
		delivered[d.RequestID]++
	}
	for id, n := range delivered {
		if n > 1 && unknown[id] == 0 {
			t.Errorf("message %s was delivered %d times but shows no attempt with outcome unknown", id, n)
		}
	}
	return k
}

// UnknownAttempts counts the attempts with outcome unknown of the rig's messages, by
// message id.
func (r *FaultRig) UnknownAttempts(t testing.TB) map[string]int {
	t.Helper()
	rows, err := r.H.App.Store.SQL().Query(`SELECT a.message_id, COUNT(*) FROM attempts a JOIN messages m ON m.id = a.message_id
		WHERE m.account_id = ? AND a.outcome = ? GROUP BY a.message_id`, r.Account.ID, models.AttemptUnknown)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		out[id] = n
	}
	return out
}
