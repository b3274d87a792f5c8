package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"herald/dispatch"
	"herald/internal/app"
	"herald/models"
	"herald/simulator"
	"herald/tasks"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// heraldBinary builds the herald binary once per test run.
func heraldBinary(t testing.TB) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "herald-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "herald")
		if out, err := exec.Command("go", "build", "-o", builtBin, "herald").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build herald: %v", buildErr)
	}
	return builtBin
}

// processEnv is the environment of a herald process the test runs: env and PATH, nothing
// of the test's own environment.
func processEnv(env map[string]string) []string {
	out := []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// startWorkers starts n `herald serve --role worker` processes and stops them at the end.
func startWorkers(t testing.TB, env map[string]string, n int, extra ...string) []*process {
	t.Helper()
	var procs []*process
	for range n {
		// Each worker serves /healthz, /readyz and /metrics on a port of its own.
		procs = append(procs, startRole(t, env, "worker", append([]string{"HERALD_ADDR=127.0.0.1:0"}, extra...)...))
	}
	return procs
}

// process is a Herald process started by a test. One goroutine waits for it, so the
// test and the cleanup can both wait without racing.
type process struct {
	*exec.Cmd
	done chan struct{}
	err  error
}

// Wait waits for the process to exit and returns how it ended.
func (p *process) Wait() error {
	<-p.done
	return p.err
}

// startRole starts `herald serve --role role` as a process of its own, with env plus the
// extra KEY=value settings, and stops it with SIGTERM at the end of the test.
func startRole(t testing.TB, env map[string]string, role string, extra ...string) *process {
	t.Helper()
	cmd := exec.Command(heraldBinary(t), "serve", "--role", role)
	cmd.Env = append(processEnv(env), extra...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{Cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("%s process output:\n%s", role, lastLines(stderr.String(), 20))
		}
	})
	return p
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// windowOracle computes, from delivery receipt times, the largest count in any trailing
// window (t−w, t] and the mean use of the limit from the first full window to the last
// delivery, sampled every 100 ms.
func windowOracle(ms []int64, w int64, limit int) (maxCount int, utilisation float64) {
	slices.Sort(ms)
	lo := 0
	for hi := range ms {
		for ms[lo] <= ms[hi]-w {
			lo++
		}
		maxCount = max(maxCount, hi-lo+1)
	}
	if len(ms) == 0 || ms[len(ms)-1]-ms[0] <= w {
		return maxCount, 0
	}
	var sum float64
	var samples int
	for t := ms[0] + w; t <= ms[len(ms)-1]; t += 100 {
		i, _ := slices.BinarySearch(ms, t-w+1)
		j, _ := slices.BinarySearch(ms, t+1)
		sum += float64(j-i) / float64(limit)
		samples++
	}
	return maxCount, sum / float64(samples)
}

// startSimulator runs `herald simulate` as a process of its own, as the platforms are,
// and returns its base URL. The receipt times the limit tests judge by are taken there,
// away from the test process and its race detector.
func startSimulator(t testing.TB, flags ...string) string {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"simulate", "--addr", addr, "--smtp-addr", freeAddr(t), "--seed", "42"}, flags...)
	cmd := exec.Command(heraldBinary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitTCP(t, addr)
	return "http://" + addr
}

// limitRig is MySQL + Redis with an in-test simulator and a Tianyuan account with limits.
type limitRig struct {
	*faultRig
	env map[string]string
}

func newLimitRig(t *testing.T, env map[string]string, limits models.Limits, recipients int) *limitRig {
	t.Helper()
	rig := newRigAt(t, env, recipients, startSimulator(t, "--latency", "2ms"))
	rig.account.Limits = limits
	if err := rig.h.app.Store.SaveAccount(context.Background(), rig.account); err != nil {
		t.Fatal(err)
	}
	rig.h.stop() // the workers under test are separate processes
	web := startHeraldAs(t, env, "web")
	rig.h = web
	rig.dispatch = intakeOf(t, web.app)
	return &limitRig{faultRig: rig, env: env}
}

// submitRounds sends `rounds` messages to every recipient (one batch per round).
func (r *limitRig) submitRounds(t *testing.T, rounds int, priority models.Priority) []string {
	t.Helper()
	var ids []string
	for range rounds {
		res, err := r.dispatch.Submit(context.Background(), dispatch.Request{Source: "api", Actor: "test",
			Account: r.account.Name, Recipients: r.people, Text: "limited", Priority: priority})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Messages {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// checkWindows asserts the limits held in the simulator's receipt times and returns the
// utilisation of each limited window.
func (r *limitRig) checkWindows(t *testing.T, limits models.Limits) map[string]float64 {
	t.Helper()
	var all []int64
	byTo := map[string][]int64{}
	for _, d := range r.deliveries(t) {
		all = append(all, d.ReceivedAtMs)
		byTo[d.To] = append(byTo[d.To], d.ReceivedAtMs)
	}
	util := map[string]float64{}
	for _, c := range []struct {
		name  string
		w     time.Duration
		limit int
	}{{"per_second", time.Second, limits.PerSecond}, {"per_minute", time.Minute, limits.PerMinute}} {
		if c.limit == 0 {
			continue
		}
		got, u := windowOracle(all, c.w.Milliseconds(), c.limit)
		t.Logf("%s: largest trailing-window count %d (limit %d), utilisation %.1f%%", c.name, got, c.limit, 100*u)
		if got > c.limit {
			t.Errorf("%s violated: %d calls in one window, limit %d", c.name, got, c.limit)
		}
		util[c.name] = u
	}
	if limits.PerRecipientPerMinute > 0 {
		worst := 0
		for to, ms := range byTo {
			got, _ := windowOracle(ms, time.Minute.Milliseconds(), limits.PerRecipientPerMinute)
			worst = max(worst, got)
			if got > limits.PerRecipientPerMinute {
				t.Errorf("per_recipient_per_minute violated for %s: %d", to, got)
			}
		}
		t.Logf("per_recipient_per_minute: largest count %d (limit %d)", worst, limits.PerRecipientPerMinute)
	}
	return util
}

// startCPUHog runs n processes that spin on the CPU until the test ends, as a build
// beside the workers would: a worker starved between its admission and its call must
// still keep the limits (the admission is checked again at the request's first byte).
func startCPUHog(t *testing.T, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
}

// cpuHogProcesses is HERALD_TEST_CPU_HOG: how many spinning processes the oracle test
// runs beside its workers (none unless set).
func cpuHogProcesses(t *testing.T) int {
	v := os.Getenv("HERALD_TEST_CPU_HOG")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("HERALD_TEST_CPU_HOG=%q: want a number of processes", v)
	}
	return n
}

// TestLimitsHoldAcrossWorkerProcesses is the oracle test: three worker processes drain
// three messages to each of 100 recipients for one account limited to 20/s and 2/min per
// recipient. The simulator's receipt times must never show more than a limit in any
// trailing window; the per-second limit must be used at 90 % or more while the first two
// rounds drain (in ten seconds), and the third round must wait for its recipients' minute.
// It stops there: the per-minute window is the same Lua script and window table with a
// longer window, which TestLimitsHoldPerMinuteAcrossWorkerProcesses runs at full length.
// With HERALD_TEST_CPU_HOG=n, n processes spin on the CPU beside the workers meanwhile.
func TestLimitsHoldAcrossWorkerProcesses(t *testing.T) {
	env := testEnv(t)
	if env["HERALD_MYSQL_DSN"] == "" || env["HERALD_REDIS_URL"] == "" {
		t.Skip("needs HERALD_TEST_MYSQL_DSN and HERALD_TEST_REDIS_URL: worker processes share MySQL and Redis")
	}
	const recipients, perRecipient = 100, 2
	limits := models.Limits{PerSecond: 20, PerRecipientPerMinute: perRecipient}
	rig := newLimitRig(t, env, limits, recipients)
	ids := rig.submitRounds(t, perRecipient+1, "normal")
	startCPUHog(t, cpuHogProcesses(t))
	startWorkers(t, env, 3)

	// The first two rounds go out at the per-second limit; the third waits for the minute
	// that began with each recipient's first message.
	allowed := recipients * perRecipient
	deadline := time.Now().Add(2 * time.Minute)
	for rig.statusCounts(t)[models.StatusSent] < allowed {
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes: %v, want %d sent", rig.statusCounts(t), allowed)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Watched for a while after: a per-recipient limit that let the third round through
	// shows here, within seconds, long before the minute ends.
	time.Sleep(3 * time.Second)
	counts := rig.statusCounts(t)
	if counts[models.StatusSent] != allowed || counts[models.StatusStopped] != 0 {
		t.Errorf("3 s after the first two rounds: %v, want %d sent and the third round (%d) waiting", counts, allowed, len(ids)-allowed)
	}
	util := rig.checkWindows(t, limits)
	if util["per_second"] < 0.90 {
		t.Errorf("per_second limit used at %.1f%% while the backlog lasted, want at least 90%%", 100*util["per_second"])
	}
	// Throttling never uses an attempt: the sent took one, the held none beyond it.
	var over int
	if err := rig.h.app.Store.SQL().QueryRow("SELECT COUNT(*) FROM messages WHERE attempts > 1 OR (status = ? AND attempts <> 1)", models.StatusSent).Scan(&over); err != nil {
		t.Fatal(err)
	}
	if over != 0 {
		t.Errorf("%d messages used more than one attempt though only throttling delayed them", over)
	}
}

// TestLimitsHoldPerMinuteAcrossWorkerProcesses is the full-length oracle (make
// test-long): three worker processes drain 2,000 messages (over three minutes at the
// per-minute limit) for one account limited to 20/s, 600/min and 5/min per recipient (each
// recipient gets 10); the simulator's receipt times must never show more than a limit in
// any trailing window, and the busiest limit must be used at 90 % or more while the
// backlog lasts. With HERALD_TEST_CPU_HOG=n, n processes spin on the CPU beside the
// workers meanwhile.
func TestLimitsHoldPerMinuteAcrossWorkerProcesses(t *testing.T) {
	env := testEnv(t)
	if env["HERALD_MYSQL_DSN"] == "" || env["HERALD_REDIS_URL"] == "" {
		t.Skip("needs HERALD_TEST_MYSQL_DSN and HERALD_TEST_REDIS_URL: worker processes share MySQL and Redis")
	}
	limits := models.Limits{PerSecond: 20, PerMinute: 600, PerRecipientPerMinute: 5}
	rig := newLimitRig(t, env, limits, 200)
	ids := rig.submitRounds(t, 10, "normal")
	startCPUHog(t, cpuHogProcesses(t))
	startWorkers(t, env, 3)
	counts := rig.waitTerminal(t, len(ids), 8*time.Minute)
	if counts[models.StatusSent] != len(ids) {
		t.Fatalf("not all sent: %v", counts)
	}
	util := rig.checkWindows(t, limits)
	if util["per_minute"] < 0.90 {
		t.Errorf("per_minute limit used at %.1f%% while the backlog lasted, want at least 90%%", 100*util["per_minute"])
	}
	// Throttling never uses an attempt: with no provider failures every message took one.
	var over int
	if err := rig.h.app.Store.SQL().QueryRow("SELECT COUNT(*) FROM messages WHERE attempts <> 1").Scan(&over); err != nil {
		t.Fatal(err)
	}
	if over != 0 {
		t.Errorf("%d messages used more than one attempt though only throttling delayed them", over)
	}
	rig.checkNoLoss(t, ids)
}

// TestRedisOutageHoldsLimits pauses a private Redis for a few seconds mid-run: sends
// wait instead of going out unlimited, and nothing is lost.
func TestRedisOutageHoldsLimits(t *testing.T) {
	env := testEnv(t)
	if env["HERALD_MYSQL_DSN"] == "" {
		t.Skip("needs HERALD_TEST_MYSQL_DSN: worker processes share MySQL")
	}
	server, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("needs redis-server to run a private Redis that can be paused")
	}
	port := freeAddr(t)
	_, portNum, _ := net.SplitHostPort(port)
	redisCmd := exec.Command(server, "--bind", "127.0.0.1", "--port", portNum, "--save", "", "--appendonly", "no")
	if err := redisCmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = redisCmd.Process.Kill(); _ = redisCmd.Wait() })
	env["HERALD_REDIS_URL"] = "redis://" + port + "/0"
	waitTCP(t, port)

	limits := models.Limits{PerSecond: 25}
	rig := newLimitRig(t, env, limits, 300)
	ids := rig.submitRounds(t, 1, "normal")
	startWorkers(t, env, 2)
	deadline := time.Now().Add(time.Minute)
	for rig.statusCounts(t)[models.StatusSent] < 50 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// Redis stops answering for four seconds.
	if err := redisCmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	if err := redisCmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	counts := rig.waitTerminal(t, len(ids), 3*time.Minute)
	if counts[models.StatusSent] != len(ids) {
		t.Errorf("after the outage: %v, want all %d sent", counts, len(ids))
	}
	rig.checkWindows(t, limits)
	rig.checkNoLoss(t, ids)
}

// waitTCP waits until something listens on addr.
func waitTCP(t testing.TB, addr string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLateAdmissionsHoldTheMessage: a worker may only use an admission that reached it
// within half the margin the windows are widened by. With no margin every admission is
// late, so a limited account's message is held back, pending as throttled, without an
// attempt, and never reaches the platform; without limits the same setup sends it.
func TestLateAdmissionsHoldTheMessage(t *testing.T) {
	env := testEnv(t)
	noMargin := func(a *app.App) { a.Limiter.Margin = 0 }
	rig := newFaultRig(t, env, 2, simulator.Faults{}, noMargin)
	rig.account.Limits = models.Limits{PerSecond: 100}
	if err := rig.h.app.Store.SaveAccount(context.Background(), rig.account); err != nil {
		t.Fatal(err)
	}
	res, err := rig.dispatch.Submit(context.Background(), dispatch.Request{Source: "api", Actor: "test",
		Account: rig.account.Name, Recipients: rig.people[:1], Text: "late"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Messages[0].ID
	deadline := time.Now().Add(20 * time.Second)
	for {
		m, err := rig.h.app.Store.MessageByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if m.Status == models.StatusPending && m.ErrorClass == "throttled" {
			if !strings.Contains(m.LastError, tasks.WindowLate) || m.Attempts != 0 {
				t.Errorf("held message: error %q, attempts %d; want %s named and no attempt used", m.LastError, m.Attempts, tasks.WindowLate)
			}
			break
		}
		if m.Status != models.StatusPending && m.Status != models.StatusSending {
			t.Fatalf("message ended %s (%s) though every admission was late", m.Status, m.LastError)
		}
		if time.Now().After(deadline) {
			t.Fatalf("message still %s after 20s", m.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(rig.deliveries(t)); n != 0 {
		t.Errorf("the platform received %d calls made on late admissions", n)
	}
	// Every late admission was taken back.
	usage, err := rig.h.app.Limiter.Usage(context.Background(), rig.account.ID, rig.account.Limits)
	if err != nil || len(usage) != 1 || usage[0].Used != 0 {
		t.Errorf("usage after only late admissions: %+v %v, want per_second used 0", usage, err)
	}

	// The same account without limits never asks the limiter.
	rig.account.Limits = models.Limits{}
	if err := rig.h.app.Store.SaveAccount(context.Background(), rig.account); err != nil {
		t.Fatal(err)
	}
	res, err = rig.dispatch.Submit(context.Background(), dispatch.Request{Source: "api", Actor: "test",
		Account: rig.account.Name, Recipients: rig.people[1:], Text: "unlimited"})
	if err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for len(rig.deliveries(t)) == 0 {
		if time.Now().After(deadline) {
			m, _ := rig.h.app.Store.MessageByID(context.Background(), res.Messages[0].ID)
			a, _ := rig.h.app.Store.AccountByName(context.Background(), rig.account.Name)
			t.Fatalf("an unlimited account's message was not delivered: %s %s %v; limits %+v", m.Status, m.LastError, m.NextAttemptAt, a.Limits)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
