package bench

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"herald/channels"
	"herald/directory"
	"herald/dispatch"
	"herald/internal/testenv"
	"herald/models"
	"herald/sending"
	"herald/simulator"
	"herald/tasks"
)

// benchSimLatency is the platform latency the simulator adds to every answer in the
// pipeline benchmarks: the figures in docs/benchmarks.md were taken with it.
const benchSimLatency = 5 * time.Millisecond

// BenchmarkPipeline measures the targets in docs/benchmarks.md in one run on MySQL and
// Redis, beside raw Asynq no-op throughput at its best on this machine (rawAsynqNoop),
// so that the machine's speed of the day cancels out of the ratios:
//   - the drain of a fan-out (intakes of 10,000 recipients) and of distinct
//     single-recipient requests, each created through the API with no worker running and
//     then sent by one worker process, with the CPU time a message costs all processes
//     together (drainCPU);
//   - created-to-sent latency of single-recipient messages offered at a steady rate;
//   - API accept latency while a worker drains a backlog;
//   - the ceiling of the delivery path: the simulator answering the adapter alone, and
//     what CPU one such call costs both sides.
//
// It prints the machine and one summary line, and reports the same figures as metrics;
// `make bench` runs it once.
func BenchmarkPipeline(b *testing.B) {
	needMySQLAndRedis(b)
	backlog := envInt("HERALD_BENCH_BACKLOG", 20000)
	latencyRate := envInt("HERALD_BENCH_LATENCY_RATE", 2000)
	for range b.N {
		rig := newBenchRig(b, directory.MaxRecipients, benchSimLatency)
		concurrency := rig.h.App.Config.WorkerConcurrency
		fmt.Fprintf(os.Stderr, "\n%s worker_concurrency=%d worker_db_conns=%d backlog=%d latency_rate=%d sim_latency=%s\n", machineLine(), concurrency,
			rig.h.App.Config.WorkerDBConns, backlog, latencyRate, benchSimLatency)

		heraldSettings := benchNoop(b, testenv.RedisURL(b), 50000, concurrency)
		raw := rawAsynqNoop(b)
		noop := raw.rate()
		perTask := func(d time.Duration) time.Duration { return (d / time.Duration(raw.Tasks)).Round(time.Microsecond) }
		b.Logf("raw asynq: %d no-op tasks, %d workers, %.0f/s; CPU per task: asynq process %s, Redis %s; all %s", raw.Tasks,
			rawAsynqConcurrency, noop, perTask(raw.CPU), perTask(raw.RedisCPU), perTask(raw.CPU+raw.RedisCPU))
		rig.fanOut(b, backlog)
		fanout := rig.drain(b, backlog, concurrency)
		rig.distinct(b, backlog, 16)
		distinct := rig.drain(b, backlog, concurrency)
		p50, p99, failedSubmits := rig.latency(b, concurrency, latencyRate, 10*time.Second)
		a50, a99, failedPosts := rig.accept(b, concurrency, 1000, 10*time.Second)
		ceiling, failedCalls := rig.simCalls(b, simCallers, 5*time.Second)

		summary := []struct {
			name   string
			value  float64
			digits int
		}{
			{"asynq_noop_tasks_per_s", noop, 0},
			{"asynq_noop_herald_settings_tasks_per_s", heraldSettings, 0},
			{"fanout_msgs_per_s", fanout.rate, 0},
			{"fanout_ratio", ratio(fanout.rate, noop), 2},
			{"fanout_cpu_us_per_msg", fanout.cpu.allMicros(), 0},
			{"distinct_msgs_per_s", distinct.rate, 0},
			{"distinct_ratio", ratio(distinct.rate, noop), 2},
			{"distinct_cpu_us_per_msg", distinct.cpu.allMicros(), 0},
			{"created_to_sent_p50_ms", ms(p50), 1},
			{"created_to_sent_p99_ms", ms(p99), 1},
			{"api_accept_p50_ms", ms(a50), 1},
			{"api_accept_p99_ms", ms(a99), 1},
			{"sim_calls_per_s", ceiling.rate, 0},
			{"sim_call_cpu_us", ceiling.cpu.Seconds() * 1e6, 0},
			{"failed_calls", float64(failedSubmits + failedPosts + failedCalls), 0},
		}
		line := "summary"
		for _, f := range summary {
			b.ReportMetric(f.value, f.name)
			line += fmt.Sprintf(" %s=%.*f", f.name, f.digits, f.value)
		}
		fmt.Fprintln(os.Stderr, line)
	}
}

// ratio is a figure over the no-op baseline; 0 when there is no baseline.
func ratio(figure, noop float64) float64 {
	if noop <= 0 {
		return 0
	}
	return figure / noop
}

// ms is a duration in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// machineLine names the machine a result came from: its CPUs, their model and the Go
// release, so that a pasted result can be read against another.
func machineLine() string {
	cpu := "unknown"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(raw)) {
			if key, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(key) == "model name" {
				cpu = strings.TrimSpace(value)
				break
			}
		}
	}
	return fmt.Sprintf("machine nproc=%d cpu=%q go=%s", runtime.NumCPU(), cpu, runtime.Version())
}

// benchNoop enqueues n no-op tasks into the normal queue of the Redis at redisURL and
// reports how fast an Asynq server in this process, with the concurrency given and the
// queues of Herald's worker (tasks.Queues: five, four of them empty here), processes
// them: Asynq with Herald's settings, below rawAsynqNoop's best.
func benchNoop(b *testing.B, redisURL string, n, concurrency int) float64 {
	red, err := tasks.ParseRedisURL(redisURL)
	if err != nil {
		b.Fatal(err)
	}
	opt := red.Asynq()
	enqueueNoops(b, opt, n, func(int) string { return tasks.QueueNormal })
	var done atomic.Int64
	finished := make(chan struct{})
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: concurrency, Queues: tasks.Queues, TaskCheckInterval: 10 * time.Millisecond,
		LogLevel: asynq.FatalLevel})
	start := time.Now()
	if err := srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		if done.Add(1) == int64(n) {
			close(finished)
		}
		return nil
	})); err != nil {
		b.Fatal(err)
	}
	<-finished
	took := time.Since(start)
	srv.Shutdown()
	return float64(n) / took.Seconds()
}

type benchRig struct {
	env    map[string]string
	h      *running
	acct   *sending.Account
	people []string
	// key is the secret of an API key with scope send.
	key string
	// simPID is the simulator's process; simAddr its HTTP address.
	simPID  int
	simAddr string
}

// newBenchRig prepares MySQL with a Tianyuan account on a `herald simulate` HTTP server
// that answers after simLatency, n branch recipients (with Tianyuan and email
// addresses), and an API key to send with. Its Herald is a web process with no worker,
// so what it accepts waits until a benchmark starts one.
func newBenchRig(b *testing.B, n int, simLatency time.Duration) *benchRig {
	env := map[string]string{
		"HERALD_DATA_DIR":       b.TempDir(),
		"HERALD_ADMIN_PASSWORD": testAdminPassword,
		"HERALD_MYSQL_DSN":      testenv.MySQLDSN(b),
		"HERALD_REDIS_URL":      testenv.RedisURL(b),
		"HERALD_SESSION_SECRET": "bench-session-secret-0123456789abcdef",
		"HERALD_SECRET_KEY":     "bench-secret-key-0123456789abcdef0123",
	}
	for _, name := range []string{"HERALD_WORKER_CONCURRENCY", "HERALD_WORKER_DB_CONNS", "HERALD_TASK_CHECK_INTERVAL"} {
		if v := os.Getenv(name); v != "" {
			env[name] = v
		}
	}
	r := &benchRig{env: env}
	simAddr := freeAddr(b)
	args := []string{"simulate", "--addr", simAddr, "--smtp-addr", freeAddr(b)}
	if simLatency > 0 {
		args = append(args, "--latency", simLatency.String())
	}
	// The simulator stands for platforms on other machines: a process of its own, so its
	// work does not share a Go runtime with the web process whose latency is measured.
	sim := exec.Command(heraldBinary(b), args...)
	if err := sim.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sim.Process.Signal(syscall.SIGTERM); _ = sim.Wait() })
	r.simPID, r.simAddr = sim.Process.Pid, simAddr
	waitHTTP(b, "http://"+simAddr+"/healthz")

	// Migrate, then seed with a process that has no worker, so the backlog waits.
	migrate := exec.Command(heraldBinary(b), "migrate", "up")
	migrate.Env = processEnv(env)
	if out, err := migrate.CombinedOutput(); err != nil {
		b.Fatalf("migrate: %v\n%s", err, out)
	}
	r.h = startHeraldAs(b, env, "web")
	store := r.h.App.Store
	r.acct = &sending.Account{Name: "ty-bench", Platform: "tianyuan", IsDefault: true, Enabled: true, AllowPrivateNetwork: true,
		MaxAttempts: 3, Healthy: true, Config: map[string]string{"base_url": "http://" + simAddr + "/tianyuan", "path": "/messages", "token": "bench"}}
	if err := store.Sending().SaveAccount(context.Background(), r.acct); err != nil {
		b.Fatal(err)
	}
	list := make([]directory.Recipient, n)
	for i := range list {
		id := fmt.Sprintf("B%06d", i)
		list[i] = directory.Recipient{ExternalID: id, Name: id, OrgType: directory.Branch, TianyuanID: "ty_" + id,
			Email: strings.ToLower(id) + "@example.com", Active: true}
		r.people = append(r.people, id)
	}
	for start := 0; start < n; start += 10000 {
		if _, err := store.Directory().UpsertRecipients(context.Background(), list[start:min(start+10000, n)]); err != nil {
			b.Fatal(err)
		}
	}
	var err error
	if _, r.key, err = store.Access().CreateAPIKey(context.Background(), "bench", "send", "bench"); err != nil {
		b.Fatal(err)
	}
	return r
}

// send posts one request to POST /api/v1/messages with the rig's key and returns its
// batch id and how many messages it accepted.
func (r *benchRig) send(client *http.Client, recipients []string, text string) (batchID string, accepted int, err error) {
	return r.sendTo(client, r.h.URL, recipients, text)
}

// sendTo is send to the server at base.
func (r *benchRig) sendTo(client *http.Client, base string, recipients []string, text string) (batchID string, accepted int, err error) {
	body, err := json.Marshal(map[string]any{"account": r.acct.Name, "recipients": recipients, "content": map[string]string{"text": text}})
	if err != nil {
		return "", 0, err
	}
	req, err := http.NewRequest("POST", base+"/api/v1/messages", bytes.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Authorization", "Bearer "+r.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	// Read to the end, so the connection is kept for the next call.
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", 0, err
	}
	if resp.StatusCode != http.StatusAccepted {
		return "", 0, fmt.Errorf("status %d: %.300s", resp.StatusCode, raw)
	}
	var out struct {
		BatchID  string `json:"batch_id"`
		Accepted int    `json:"accepted"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", 0, fmt.Errorf("answer %.300s: %w", raw, err)
	}
	return out.BatchID, out.Accepted, nil
}

// fanOut creates n messages through the API in intakes of up to directory.MaxRecipients
// of the rig's people each, and returns their batch ids.
func (r *benchRig) fanOut(b *testing.B, n int) []string {
	client := &http.Client{Timeout: 5 * time.Minute}
	var batches []string
	for start := 0; start < n; start += len(r.people) {
		size := min(len(r.people), n-start)
		batch, accepted, err := r.send(client, r.people[:size], "bench fan-out")
		if err != nil {
			b.Fatalf("fan-out intake of %d: %v", size, err)
		}
		if accepted != size {
			b.Fatalf("fan-out intake of %d accepted %d", size, accepted)
		}
		batches = append(batches, batch)
	}
	return batches
}

// distinct creates n single-recipient messages through the API, one request each, from
// callers concurrent callers on keep-alive connections.
func (r *benchRig) distinct(b *testing.B, n, callers int) {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: callers}}
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				_, accepted, err := r.send(client, []string{r.people[i%len(r.people)]}, "bench distinct")
				if err == nil && accepted != 1 {
					err = fmt.Errorf("accepted %d, want 1", accepted)
				}
				if err != nil && failed.Add(1) <= 3 {
					b.Logf("distinct request %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d distinct requests failed", f, n)
	}
}

// benchWorker is a `herald serve --role worker` process of its own, as in production.
type benchWorker struct {
	proc *process
	// started is when it first answered /healthz. Its Asynq server starts just before
	// its HTTP listener, so the clock starts at most one poll of waitHTTP (20 ms) late.
	started time.Time
}

// startWorker starts one worker process of the given concurrency and waits until it
// serves; under nice -n HERALD_BENCH_WORKER_NICE when that is set, as a worker sharing
// the machine with the web process is run at a lower CPU priority (README, "Production
// configuration"), and with the KEY=value settings of HERALD_BENCH_WORKER_ENV (e.g.
// GOGC=200) added to its environment.
func (r *benchRig) startWorker(b *testing.B, concurrency int) *benchWorker {
	addr := freeAddr(b)
	var wrapper []string
	if n := os.Getenv("HERALD_BENCH_WORKER_NICE"); n != "" {
		wrapper = []string{"nice", "-n", n}
	}
	extra := append([]string{"HERALD_ADDR=" + addr, fmt.Sprintf("HERALD_WORKER_CONCURRENCY=%d", concurrency)},
		strings.Fields(os.Getenv("HERALD_BENCH_WORKER_ENV"))...)
	proc := startRoleUnder(b, wrapper, r.env, "worker", extra...)
	waitHTTP(b, "http://"+addr+"/healthz")
	return &benchWorker{proc: proc, started: time.Now()}
}

// peakRSSMB is the process's peak resident memory (VmHWM in /proc) in MiB, or 0 where
// /proc does not say.
func (w *benchWorker) peakRSSMB() float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.proc.Process.Pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb float64
			if _, err := fmt.Sscan(v, &kb); err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}

// stop ends the process as an operator would (SIGTERM) and waits for it.
func (w *benchWorker) stop(b *testing.B) {
	if err := w.proc.Process.Signal(syscall.SIGTERM); err != nil {
		b.Logf("stop worker: %v", err)
	}
	if err := w.proc.Wait(); err != nil {
		b.Logf("worker exited with: %v", err)
	}
}

// sentCount counts the sent messages.
func (r *benchRig) sentCount(b *testing.B) int {
	var sent int
	if err := r.h.App.Store.SQL().QueryRow("SELECT COUNT(*) FROM messages WHERE status = 'sent'").Scan(&sent); err != nil {
		b.Fatal(err)
	}
	return sent
}

// simAccepted is how many deliveries the rig's simulator has recorded.
func (r *benchRig) simAccepted(b *testing.B) int {
	resp, err := http.Get("http://" + r.simAddr + "/_sim/stats")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var stats simulator.Stats
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		b.Fatalf("simulator stats: %v", err)
	}
	return int(stats.Accepted)
}

// drainResult is what one drain measured.
type drainResult struct {
	// rate is messages sent per second: n / (last sent_at − worker start).
	rate float64
	// rssMB is the worker's peak resident memory in MiB.
	rssMB float64
	// cpu is the CPU time a message cost each process.
	cpu drainCPU
}

// drain starts one worker process of the given concurrency on n messages that wait with
// every earlier message sent, and measures until all n are sent.
func (r *benchRig) drain(b *testing.B, n, concurrency int) drainResult {
	before, delivered, cpu := r.sentCount(b), r.simAccepted(b), r.cpuNow()
	w := r.startWorker(b, concurrency)
	defer w.stop(b)
	for poll := 1; ; poll++ {
		// The database is asked every second, and every poll once the simulator has seen
		// every message: counting the sent rows reads the status index over all of them,
		// which MariaDB's figure charges to the messages (asked every 100 ms, about 6 µs
		// a message in the distinct drain). The simulator's count alone cannot end a
		// drain: it leaves out what a platform drops silently past its limits.
		if poll%10 == 0 || r.simAccepted(b)-delivered >= n {
			sent := r.sentCount(b) - before
			if sent == n {
				break
			}
			if sent > n {
				b.Fatalf("drain: %d sent, but only %d were waiting", sent, n)
			}
		}
		if time.Since(w.started) > 10*time.Minute {
			b.Fatalf("drain: %d of %d sent after 10 minutes", r.sentCount(b)-before, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	perMessage := r.logCPU(b, n, w, cpu)
	// The last rows were sent before the last poll: take the true span from the data.
	var last time.Time
	if err := r.h.App.Store.SQL().QueryRow("SELECT MAX(sent_at) FROM messages").Scan(&last); err != nil {
		b.Fatal(err)
	}
	r.logDrainStart(b, n, w.started.UTC(), last)
	return drainResult{rate: float64(n) / last.Sub(w.started.UTC()).Seconds(), rssMB: w.peakRSSMB(), cpu: perMessage}
}

// logDrainStart logs how a drain of n messages began: the first message sent after the
// worker answered its health check at started, and the rate in the drain's first
// second beside the rate over the rest, from the rows' sent_at.
func (r *benchRig) logDrainStart(b *testing.B, n int, started, last time.Time) {
	second := started.Add(time.Second)
	var first sql.NullTime
	var inFirst int
	if err := r.h.App.Store.SQL().QueryRow("SELECT MIN(sent_at), COALESCE(SUM(sent_at < ?), 0) FROM messages WHERE sent_at >= ?",
		second, started).Scan(&first, &inFirst); err != nil || !first.Valid {
		b.Logf("drain of %d: its start not read: %v", n, err)
		return
	}
	rest := -1.0
	if last.After(second) {
		rest = float64(n-inFirst) / last.Sub(second).Seconds()
	}
	b.Logf("drain of %d: first sent %.0f ms after the worker answered; %d/s in its first second, %.0f/s after",
		n, ms(first.Time.Sub(started)), inFirst, rest)
}

// cpuReading is the CPU time used so far by MariaDB, Redis, the rig's simulator and
// this process (the rig's web process), and by the machine's cores (busy, and in all).
type cpuReading struct{ db, redis, sim, web, busy, total time.Duration }

func (r *benchRig) cpuNow() cpuReading {
	busy, total := machineCPU()
	return cpuReading{db: testenv.DatabaseCPU(), redis: testenv.RedisCPU(), sim: testenv.PIDCPU(r.simPID), web: processCPU(), busy: busy, total: total}
}

// drainCPU is the CPU time one message of a drain cost each process on the machine.
type drainCPU struct {
	db, redis, worker, sim time.Duration
	// web is this test process: the rig's web process, idle during a drain, and the
	// benchmark polling the database for the count of sent messages.
	web time.Duration
}

// all is what a message cost all of them together.
func (c drainCPU) all() time.Duration { return c.db + c.redis + c.worker + c.sim + c.web }

// allMicros is all in microseconds; -1 when /proc did not tell.
func (c drainCPU) allMicros() float64 {
	if c == (drainCPU{}) {
		return -1
	}
	return float64(c.all().Nanoseconds()) / 1000
}

// logCPU logs, and returns, where the machine's CPU went while a worker drained n
// messages since the reading before it started: the CPU time per message of each
// process, the rest of the cores' busy time (the kernel's and other programs': on a
// shared machine, what others ran meanwhile; their queries count under MariaDB and
// Redis), and how busy the cores were.
func (r *benchRig) logCPU(b *testing.B, n int, w *benchWorker, before cpuReading) drainCPU {
	now, worker := r.cpuNow(), testenv.PIDCPU(w.proc.Process.Pid)
	if before.db < 0 || before.redis < 0 || before.sim < 0 || before.web < 0 || worker < 0 || now.total <= before.total {
		b.Logf("drain of %d: /proc does not tell where the CPU went", n)
		return drainCPU{}
	}
	per := func(d time.Duration) time.Duration { return (d / time.Duration(n)).Round(time.Microsecond) }
	c := drainCPU{db: per(now.db - before.db), redis: per(now.redis - before.redis), worker: per(worker),
		sim: per(now.sim - before.sim), web: per(now.web - before.web)}
	b.Logf("drain of %d: CPU per message: MariaDB %s, Redis %s, worker %s, simulator %s, web (this process, polling too) %s; all %s; rest of the machine %s; cores %.0f%% busy",
		n, c.db, c.redis, c.worker, c.sim, c.web, c.all(), per(now.busy-before.busy)-c.all(), 100*float64(now.busy-before.busy)/float64(now.total-before.total))
	return c
}

// latency offers single-recipient requests at rate per second for a while, with a
// worker process running, and returns the created-to-sent percentiles from the stored
// rows.
func (r *benchRig) latency(b *testing.B, concurrency, rate int, span time.Duration) (p50, p99 time.Duration, failed int) {
	worker := r.startWorker(b, concurrency)
	defer worker.stop(b)
	d := r.h.App.Dispatch
	batchIDs, failed := offer(b, rate, span, func(i int) (string, error) {
		res, err := d.Submit(context.Background(), dispatch.Request{Source: "api", Actor: "bench", Account: r.acct.Name,
			Recipients: []string{r.people[i%len(r.people)]}, Text: "bench latency"})
		if err != nil {
			return "", err
		}
		return res.Batch.ID, nil
	})
	p50, p99 = r.sentLatency(b, batchIDs, func(m *models.Message) time.Duration { return m.SentAt.Sub(m.CreatedAt) })
	r.latencyParts(b, "bench latency")
	return p50, p99, failed
}

// latencyParts logs where the created-to-sent time of the messages with this text went:
// waiting for a worker (row written to attempt started), the platform call, and
// recording the outcome (call ended to row marked sent).
func (r *benchRig) latencyParts(b *testing.B, text string) {
	rows, err := r.h.App.Store.SQL().Query(`SELECT m.created_at, a.started_at, a.duration_ms, m.sent_at
		FROM messages m JOIN attempts a ON a.message_id = m.id WHERE m.content = ? AND m.sent_at IS NOT NULL`, text)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var wait, call, record []time.Duration
	for rows.Next() {
		var created, started, sent time.Time
		var ms int
		if err := rows.Scan(&created, &started, &ms, &sent); err != nil {
			b.Fatal(err)
		}
		took := time.Duration(ms) * time.Millisecond
		wait, call, record = append(wait, started.Sub(created)), append(call, took), append(record, sent.Sub(started.Add(took)))
	}
	w50, w99 := percentiles(wait)
	c50, c99 := percentiles(call)
	r50, r99 := percentiles(record)
	b.Logf("created→sent parts (p50/p99): waiting for a worker %s/%s, platform call %s/%s, recording %s/%s", w50, w99, c50, c99, r50, r99)
}

// accept creates a fan-out backlog of 10,000, starts a worker process on it, and while
// it drains posts single-recipient API requests at rate per second; it returns the
// client-measured accept latency percentiles, and logs how much of the backlog was sent
// during the offer.
func (r *benchRig) accept(b *testing.B, concurrency, rate int, span time.Duration) (p50, p99 time.Duration, failed int) {
	backlog := r.fanOut(b, len(r.people))
	worker := r.startWorker(b, concurrency)
	defer worker.stop(b)
	offered := time.Now()
	took, began, failed := r.postAtRate(b, rate, span, "bench accept")
	var sent int
	var last sql.NullTime
	if err := r.h.App.Store.SQL().QueryRow("SELECT COUNT(*), MAX(sent_at) FROM messages WHERE batch_id = ? AND status = 'sent' AND sent_at <= ?",
		backlog[0], offered.Add(span).UTC()).Scan(&sent, &last); err != nil {
		b.Fatal(err)
	}
	if last.Valid {
		drained := last.Time.Sub(offered.UTC())
		b.Logf("accept: %d of the %d backlog messages were sent during the %s offer, the last %s after it began",
			sent, len(r.people), span, drained.Round(time.Millisecond))
		var during, after []time.Duration
		for i, d := range took {
			if began[i].Before(last.Time) {
				during = append(during, d)
			} else {
				after = append(after, d)
			}
		}
		d50, d99 := percentiles(during)
		a50, a99 := percentiles(after)
		b.Logf("accept (p50/p99): %d requests while the backlog drained %s/%s, %d after it %s/%s", len(during), d50, d99, len(after), a50, a99)
	} else {
		b.Logf("accept: none of the %d backlog messages was sent during the %s offer", len(r.people), span)
	}
	p50, p99 = percentiles(took)
	return p50, p99, failed
}

// postAtRate posts single-recipient API requests at rate per second for span (open loop)
// and returns each accepted request's latency and when it began.
func (r *benchRig) postAtRate(b *testing.B, rate int, span time.Duration, text string) (took []time.Duration, began []time.Time, failed int) {
	return r.postAtRateTo(b, r.h.URL, rate, span, text)
}

// postAtRateTo is postAtRate to the server at base.
func (r *benchRig) postAtRateTo(b *testing.B, base string, rate int, span time.Duration, text string) (took []time.Duration, began []time.Time, failed int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 10 * time.Second}
	var mu sync.Mutex
	_, failed = offer(b, rate, span, func(i int) (string, error) {
		start := time.Now()
		_, accepted, err := r.sendTo(client, base, []string{r.people[i%len(r.people)]}, text)
		d := time.Since(start)
		if err != nil {
			return "", err
		}
		if accepted != 1 {
			return "", fmt.Errorf("accepted %d, want 1", accepted)
		}
		mu.Lock()
		took, began = append(took, d), append(began, start)
		mu.Unlock()
		return "", nil
	})
	return took, began, failed
}

// simCallers is how many goroutines call the simulator for the delivery path's ceiling:
// enough that the cores, not the simulator's 5 ms answer, are the limit (64 callers
// would stop at 12,800 calls a second).
const simCallers = 256

// simCeiling is the delivery path alone: the calls a second it answered, and the CPU
// time one call cost the calling process (the adapter and its callers) and the
// simulator together, which is a floor under what a delivered message can cost.
type simCeiling struct {
	rate float64
	cpu  time.Duration
}

// simCalls calls the Tianyuan adapter the send handler uses, built from the rig's
// account through a channels.Registry as the worker builds it, from callers goroutines
// for span against the rig's simulator, and returns the successful calls per second and
// their CPU per call: the ceiling of the delivery path, with no database or queue in it.
func (r *benchRig) simCalls(b *testing.B, callers int, span time.Duration) (ceiling simCeiling, failed int) {
	sender, err := channels.NewRegistry(nil).Sender(r.acct.Channel())
	if err != nil {
		b.Fatal(err)
	}
	var sent, errs atomic.Int64
	sim0, self0 := testenv.PIDCPU(r.simPID), processCPU()
	start := time.Now()
	deadline := start.Add(span)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for n := 0; time.Now().Before(deadline); n++ {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := sender.Send(ctx, channels.Message{ID: fmt.Sprintf("ceiling-%d-%d", c, n),
					To: "ty_" + r.people[n%len(r.people)], MsgType: "text", Content: "bench ceiling"})
				cancel()
				if err != nil {
					if errs.Add(1) <= 3 {
						b.Logf("simulator call failed: %v", err)
					}
					continue
				}
				sent.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	sim, self := testenv.PIDCPU(r.simPID)-sim0, processCPU()-self0
	if n := sent.Load(); n > 0 {
		ceiling.cpu = (sim + self) / time.Duration(n)
		b.Logf("delivery path alone: %d calls from %d callers, %.0f/s; CPU per call: simulator %s, adapter and callers %s",
			n, callers, float64(n)/took.Seconds(), (sim / time.Duration(n)).Round(time.Microsecond), (self / time.Duration(n)).Round(time.Microsecond))
	}
	ceiling.rate = float64(sent.Load()) / took.Seconds()
	return ceiling, int(errs.Load())
}

// offer calls fn at a steady rate for span (open loop: a slow call does not delay the
// next), and returns what the calls returned and how many failed. Failed calls (an
// overloaded machine times out) are counted and the first few logged: the benchmark
// reports overload instead of stopping at it.
func offer(b *testing.B, rate int, span time.Duration, fn func(i int) (string, error)) (out []string, failed int) {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs atomic.Int64
	)
	interval := time.Second / time.Duration(rate)
	total := int(span / interval)
	start := time.Now()
	for i := range total {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := fn(i)
			if err != nil {
				if errs.Add(1) <= 3 {
					b.Logf("call %d of %d failed: %v", i, total, err)
				}
				return
			}
			mu.Lock()
			out = append(out, id)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if n := errs.Load(); n > 0 {
		b.Logf("%d of %d calls failed at %d/s", n, total, rate)
	}
	return out, int(errs.Load())
}

func (r *benchRig) sentLatency(b *testing.B, batchIDs []string, measure func(*models.Message) time.Duration) (p50, p99 time.Duration) {
	deadline := time.Now().Add(2 * time.Minute)
	var took []time.Duration
	for _, id := range batchIDs {
		for {
			msgs, err := r.h.App.Store.MessagesOfBatch(context.Background(), id, 1)
			if err != nil {
				b.Fatal(err)
			}
			if len(msgs) == 1 && msgs[0].SentAt != nil {
				took = append(took, measure(&msgs[0].Message))
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("batch %s not sent after 2 minutes", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return percentiles(took)
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	return d[len(d)*50/100], d[min(len(d)*99/100, len(d)-1)]
}

// BenchmarkDashboard measures the live dashboard's render time with 1,000,000 message
// rows (and attempts and a day of per-minute rollups) in MySQL: the target in docs/benchmarks.md is
// p95 under 50 ms.
func BenchmarkDashboard(b *testing.B) {
	needMySQLAndRedis(b)
	rows := envInt("HERALD_BENCH_DASHBOARD_ROWS", 1000000)
	env := map[string]string{
		"HERALD_DATA_DIR": b.TempDir(), "HERALD_ADMIN_PASSWORD": testAdminPassword, "HERALD_DEMO": "true",
		"HERALD_MYSQL_DSN": testenv.MySQLDSN(b), "HERALD_REDIS_URL": testenv.RedisURL(b),
		"HERALD_SESSION_SECRET": "bench-session-secret-0123456789abcdef", "HERALD_SECRET_KEY": "bench-secret-key-0123456789abcdef0123",
	}
	h := startHerald(b, env)
	db := h.App.Store.SQL()
	// A thousand real rows, then copied in SQL (50,000 at a time, which a default
	// buffer pool can lock) until there are enough.
	ctx := context.Background()
	d := intakeOf(b, h.App)
	for range 200 {
		if _, err := d.Submit(ctx, dispatch.Request{Source: "api", Actor: "bench", Platform: "sandbox",
			Recipients: []string{"E2001", "E2002", "E2003", "E2001", "E2002"}, Text: "seed"}); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // let them send, so attempts exist
	for n := 0; n < rows; {
		if err := db.QueryRow("SELECT COUNT(*) FROM messages").Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n >= rows {
			break
		}
		_, err := db.Exec(`INSERT INTO messages (id, batch_id, recipient_id, account_id, platform, address, msg_type, subject, content,
			priority, status, attempts, max_attempts, class_retries, send_at, next_attempt_at, lease_until, claim_token, error_class, last_error,
			provider_message_id, created_at, updated_at, sent_at)
			SELECT UUID(), batch_id, recipient_id, account_id, platform, address, msg_type, subject, content, priority, status, attempts,
			max_attempts, class_retries, send_at, next_attempt_at, lease_until, claim_token, error_class, last_error, provider_message_id,
			created_at - INTERVAL FLOOR(RAND() * 30) DAY, updated_at, sent_at FROM messages LIMIT ?`, min(rows-n, 50000))
		if err != nil {
			b.Fatal(err)
		}
	}
	for m := range 1440 {
		if _, err := db.Exec("INSERT IGNORE INTO message_stats (minute, account_id, created, sent, failed, stopped, cancelled) VALUES (?, 1, 700, 690, 12, 3, 1)",
			time.Now().UTC().Truncate(time.Minute).Add(-time.Duration(m+1)*time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(h.URL+"/login", map[string][]string{"username": {"admin"}, "password": {testAdminPassword}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		b.Fatalf("login: %v %v", resp, err)
	}
	resp.Body.Close()
	var took []time.Duration
	b.ResetTimer()
	for range max(b.N, 200) {
		start := time.Now()
		resp, err := client.Get(h.URL + "/dashboard/live")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("dashboard: %d", resp.StatusCode)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	p50, p95 := took[len(took)/2], took[len(took)*95/100]
	b.ReportMetric(float64(p50.Microseconds())/1000, "dashboard_p50_ms")
	b.ReportMetric(float64(p95.Microseconds())/1000, "dashboard_p95_ms")
	fmt.Fprintf(os.Stderr, "\ndashboard with %d message rows: p50 %s p95 %s over %d renders\n", rows, p50, p95, len(took))
}

// BenchmarkScheduledLateness measures how late scheduled sends go out: single-recipient
// messages offered at 40/s for 15 s, then at 2,000/s for 5 s, each with a send_at 2 to
// 6 s ahead (and a fraction of a second), one worker. One line per rate:
//
//	scheduled rate=40 sent=600 early=0 p50_ms=… p99_ms=… max_ms=…
//
// lateness is sent_at − send_at; early counts messages whose call started before their
// send_at. HERALD_BENCH_SCHEDULED_RATES (e.g. "40,2000") changes the rates.
func BenchmarkScheduledLateness(b *testing.B) {
	needMySQLAndRedis(b)
	rates := []int{40, 2000}
	if raw := os.Getenv("HERALD_BENCH_SCHEDULED_RATES"); raw != "" {
		rates = nil
		for f := range strings.SplitSeq(raw, ",") {
			var r int
			if _, err := fmt.Sscan(f, &r); err != nil || r <= 0 {
				b.Fatalf("HERALD_BENCH_SCHEDULED_RATES: %q is not a rate", f)
			}
			rates = append(rates, r)
		}
	}
	for range b.N {
		rig := newBenchRig(b, 2000, 0)
		// The machine's speed of the day, measured in the same run.
		raw := rawAsynqNoop(b)
		b.ReportMetric(raw.rate(), "asynq_noop_tasks/s")
		fmt.Fprintf(os.Stderr, "\n%s raw_asynq_noop_tasks_per_s=%.0f\n", machineLine(), raw.rate())
		worker := startHeraldAs(b, rig.env, "worker")
		for _, rate := range rates {
			// At least 10,000 messages or 15 s, whichever is shorter.
			span := min(15*time.Second, time.Duration(10000/rate)*time.Second)
			r := rig.scheduledLateness(b, rate, span)
			b.ReportMetric(float64(r.early), fmt.Sprintf("scheduled_%d_early", rate))
			b.ReportMetric(ms(r.p99), fmt.Sprintf("scheduled_%d_late_p99_ms", rate))
			fmt.Fprintf(os.Stderr, "\nscheduled rate=%d sent=%d early=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f\n",
				rate, r.sent, r.early, ms(r.p50), ms(r.p99), ms(r.max))
			// Messages the intake wrote only after they were due measure the intake's
			// backlog, not the schedule: how many, and the lateness counted from when
			// each message was both due and written.
			fmt.Fprintf(os.Stderr, "scheduled rate=%d call_start_p50_ms=%.1f call_start_p99_ms=%.1f answered_p50_ms=%.1f answered_p99_ms=%.1f\n",
				rate, ms(r.startP50), ms(r.startP99), ms(r.answerP50), ms(r.answerP99))
			fmt.Fprintf(os.Stderr, "scheduled rate=%d written_after_due=%d from_written_p50_ms=%.1f from_written_p99_ms=%.1f\n",
				rate, r.writtenLate, ms(r.fromWrittenP50), ms(r.fromWrittenP99))
			if r.failed > 0 || r.sent < r.offered {
				fmt.Fprintf(os.Stderr, "scheduled rate=%d: %d offered, %d refused, %d not sent in time\n", rate, r.offered, r.failed, r.offered-r.failed-r.sent)
			}
		}
		worker.Stop()
	}
}

// scheduledRun is what one rate of BenchmarkScheduledLateness measured.
type scheduledRun struct {
	offered, failed, sent, early, writtenLate int
	p50, p99, max                             time.Duration
	// fromWritten* count lateness from the later of send_at and the row's created_at.
	fromWrittenP50, fromWrittenP99 time.Duration
	// start* count lateness to the provider call's start, answer* to its answer.
	startP50, startP99, answerP50, answerP99 time.Duration
}

// scheduledLateness offers single-recipient messages at rate for span, each due 2 to 6 s
// later, waits until they are sent (two minutes at most) and measures how late each went.
func (r *benchRig) scheduledLateness(b *testing.B, rate int, span time.Duration) scheduledRun {
	d := r.h.App.Dispatch // the web process's intake, with its caches
	text := fmt.Sprintf("bench scheduled at %d/s", rate)
	var offered atomic.Int64
	batchIDs, failed := offer(b, rate, span, func(i int) (string, error) {
		offered.Add(1)
		at := time.Now().Add(2*time.Second + time.Duration(i%5)*time.Second)
		res, err := d.Submit(context.Background(), dispatch.Request{Source: "api", Actor: "bench", Account: r.acct.Name,
			Recipients: []string{r.people[i%len(r.people)]}, Text: text, SendAt: &at})
		if err != nil {
			return "", err
		}
		return res.Batch.ID, nil
	})
	run := scheduledRun{offered: int(offered.Load()), failed: failed}
	db := r.h.App.Store.SQL()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if err := db.QueryRow("SELECT COUNT(*) FROM messages WHERE content = ? AND sent_at IS NOT NULL", text).Scan(&run.sent); err != nil {
			b.Fatal(err)
		}
		if run.sent >= len(batchIDs) || time.Now().After(deadline) {
			break
		}
	}
	rows, err := db.Query(`SELECT m.send_at, m.sent_at, m.created_at, (SELECT MIN(a.started_at) FROM attempts a WHERE a.message_id = m.id),
		(SELECT a.started_at + INTERVAL a.duration_ms * 1000 MICROSECOND FROM attempts a WHERE a.message_id = m.id AND a.n = m.attempts)
		FROM messages m WHERE m.content = ? AND m.sent_at IS NOT NULL`, text)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var late, fromWritten, startLate, answerLate []time.Duration
	for rows.Next() {
		var sendAt, sentAt, created, started, answered time.Time
		if err := rows.Scan(&sendAt, &sentAt, &created, &started, &answered); err != nil {
			b.Fatal(err)
		}
		late = append(late, sentAt.Sub(sendAt))
		startLate = append(startLate, started.Sub(sendAt))
		answerLate = append(answerLate, answered.Sub(sendAt))
		if started.Before(sendAt) {
			run.early++
		}
		if created.After(sendAt) {
			run.writtenLate++
		}
		fromWritten = append(fromWritten, sentAt.Sub(maxTime(sendAt, created)))
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	if len(late) > 0 {
		run.p50, run.p99 = percentiles(late)
		run.max = slices.Max(late)
		run.fromWrittenP50, run.fromWrittenP99 = percentiles(fromWritten)
		run.startP50, run.startP99 = percentiles(startLate)
		run.answerP50, run.answerP99 = percentiles(answerLate)
	}
	return run
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
