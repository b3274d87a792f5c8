package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"herald/dispatch"
	"herald/internal/testenv"
	"herald/models"
	"herald/simulator"
	"herald/tasks"
)

// BenchmarkPipeline measures the targets in docs/benchmarks.md in one run on MySQL and
// Redis: raw Asynq no-op throughput, the drain rate of a backlog of distinct messages,
// created-to-sent latency at a steady offered rate, and API accept latency. It reports
// custom metrics; `make bench` runs it once.
func BenchmarkPipeline(b *testing.B) {
	if os.Getenv("HERALD_TEST_MYSQL_DSN") == "" || os.Getenv("HERALD_TEST_REDIS_URL") == "" {
		b.Skip("set HERALD_TEST_MYSQL_DSN and HERALD_TEST_REDIS_URL (make bench does)")
	}
	backlog := envInt("HERALD_BENCH_BACKLOG", 100000)
	for range b.N {
		noop := benchNoop(b, 50000)
		b.ReportMetric(noop, "asynq_noop_tasks/s")

		rig := newBenchRig(b, backlog)
		drain := rig.drain(b)
		b.ReportMetric(drain, "drain_msg/s")

		p50, p99, failedSubmits := rig.latency(b, 2000, 10*time.Second)
		b.ReportMetric(float64(p50.Microseconds())/1000, "created_to_sent_p50_ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, "created_to_sent_p99_ms")

		a50, a99, failedPosts := rig.accept(b, 1000, 10*time.Second)
		b.ReportMetric(float64(a50.Microseconds())/1000, "api_accept_p50_ms")
		b.ReportMetric(float64(a99.Microseconds())/1000, "api_accept_p99_ms")
		failed := failedSubmits + failedPosts
		b.ReportMetric(float64(failed), "failed_calls")
		fmt.Fprintf(os.Stderr, "\nasynq no-op %.0f tasks/s · drain %.0f msg/s (%d messages) · created→sent p50 %s p99 %s at 2000/s · API accept p50 %s p99 %s at 1000/s · %d offered calls failed\n",
			noop, drain, backlog, p50, p99, a50, a99, failed)
	}
}

func envInt(name string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(name), &n); err == nil && n > 0 {
		return n
	}
	return def
}

// benchNoop enqueues n no-op tasks and reports how fast a 50-goroutine Asynq server
// with the same settings as Herald's worker processes them.
func benchNoop(b *testing.B, n int) float64 {
	red, err := tasks.ParseRedisURL(testenv.RedisURL(b))
	if err != nil {
		b.Fatal(err)
	}
	opt := red.Asynq()
	enq := tasks.NewEnqueuer(opt)
	defer enq.Close()
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if _, err := enq.Client().Enqueue(asynq.NewTask("bench:noop", nil, asynq.TaskID(fmt.Sprint(i)), asynq.Queue(tasks.QueueNormal))); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	var done atomic.Int64
	finished := make(chan struct{})
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: 50, Queues: tasks.Queues, TaskCheckInterval: 10 * time.Millisecond,
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
	acct   *models.Account
	people []string
}

// newBenchRig prepares MySQL with a Tianyuan account on a simulator served over HTTP
// by a separate `herald simulate` process, and n branch recipients.
func newBenchRig(b *testing.B, n int) *benchRig {
	env := map[string]string{
		"HERALD_DATA_DIR":       b.TempDir(),
		"HERALD_ADMIN_PASSWORD": testAdminPassword,
		"HERALD_MYSQL_DSN":      testenv.MySQLDSN(b),
		"HERALD_REDIS_URL":      testenv.RedisURL(b),
		"HERALD_SESSION_SECRET": "bench-session-secret-0123456789abcdef",
		"HERALD_SECRET_KEY":     "bench-secret-key-0123456789abcdef0123",
	}
	if v := os.Getenv("HERALD_WORKER_CONCURRENCY"); v != "" {
		env["HERALD_WORKER_CONCURRENCY"] = v
	}
	r := &benchRig{env: env}
	simAddr := freeAddr(b)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	go func() {
		_ = simulator.RunCommand(ctx, []string{"--addr", simAddr, "--smtp-addr", freeAddr(b)}, &bytes.Buffer{})
	}()
	waitHTTP(b, "http://"+simAddr+"/healthz")

	// Migrate, then seed with a process that has no worker, so the backlog waits.
	var out bytes.Buffer
	if code := run(context.Background(), []string{"migrate", "up"}, func(k string) string { return env[k] }, nil, &out, &out); code != 0 {
		b.Fatalf("migrate: %s", out.String())
	}
	r.h = startHeraldAs(b, env, "web")
	store := r.h.app.Store
	r.acct = &models.Account{Name: "ty-bench", Platform: "tianyuan", IsDefault: true, Enabled: true, AllowPrivateNetwork: true,
		MaxAttempts: 3, Healthy: true, Config: map[string]string{"base_url": "http://" + simAddr + "/tianyuan", "path": "/messages", "token": "bench"}}
	if err := store.SaveAccount(context.Background(), r.acct); err != nil {
		b.Fatal(err)
	}
	list := make([]models.Recipient, n)
	for i := range list {
		id := fmt.Sprintf("B%06d", i)
		list[i] = models.Recipient{ExternalID: id, Name: id, OrgType: models.Branch, TianyuanID: "ty_" + id, Active: true}
		r.people = append(r.people, id)
	}
	for start := 0; start < n; start += 10000 {
		if _, err := store.UpsertRecipients(context.Background(), list[start:min(start+10000, n)]); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

// drain creates the backlog (one message per recipient) with no worker running, then
// starts a worker and measures until every message is sent.
func (r *benchRig) drain(b *testing.B) float64 {
	d := &dispatch.Dispatcher{Store: r.h.app.Store, Enqueuer: r.h.app.Enqueuer, Log: r.h.app.Log, Location: r.h.app.Config.Location}
	for start := 0; start < len(r.people); start += dispatch.MaxRecipients {
		_, err := d.Submit(context.Background(), dispatch.Request{Source: "api", Actor: "bench", Account: r.acct.Name,
			Recipients: r.people[start:min(start+dispatch.MaxRecipients, len(r.people))], Text: "bench backlog"})
		if err != nil {
			b.Fatal(err)
		}
	}
	worker := startHeraldAs(b, r.env, "worker")
	defer worker.stop()
	start := time.Now()
	for {
		var sent int
		if err := r.h.app.Store.SQL().QueryRow("SELECT COUNT(*) FROM messages WHERE status = 'sent'").Scan(&sent); err != nil {
			b.Fatal(err)
		}
		if sent == len(r.people) {
			break
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("drain: %d of %d sent after 10 minutes", sent, len(r.people))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The last rows were sent before the last poll: take the true span from the data.
	var first, last time.Time
	if err := r.h.app.Store.SQL().QueryRow("SELECT MIN(sent_at), MAX(sent_at) FROM messages").Scan(&first, &last); err != nil {
		b.Fatal(err)
	}
	return float64(len(r.people)) / last.Sub(start.UTC()).Seconds()
}

// latency offers single-recipient requests at rate per second for a while, with a
// worker running, and returns the created-to-sent percentiles from the stored rows.
func (r *benchRig) latency(b *testing.B, rate int, span time.Duration) (p50, p99 time.Duration, failed int) {
	worker := startHeraldAs(b, r.env, "worker")
	defer worker.stop()
	d := &dispatch.Dispatcher{Store: r.h.app.Store, Enqueuer: r.h.app.Enqueuer, Log: r.h.app.Log, Location: r.h.app.Config.Location}
	batchIDs, failed := offer(b, rate, span, func(i int) (string, error) {
		res, err := d.Submit(context.Background(), dispatch.Request{Source: "api", Actor: "bench", Account: r.acct.Name,
			Recipients: []string{r.people[i%len(r.people)]}, Text: "bench latency"})
		if err != nil {
			return "", err
		}
		return res.Batch.ID, nil
	})
	p50, p99 = r.sentLatency(b, batchIDs, func(m *models.Message) time.Duration { return m.SentAt.Sub(m.CreatedAt) })
	return p50, p99, failed
}

// accept posts single-recipient API requests at rate per second and returns the
// client-measured accept latency percentiles.
func (r *benchRig) accept(b *testing.B, rate int, span time.Duration) (p50, p99 time.Duration, failed int) {
	_, secret, err := r.h.app.Store.CreateAPIKey(context.Background(), "bench", "send", "bench")
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 10 * time.Second}
	var mu sync.Mutex
	var took []time.Duration
	_, failed = offer(b, rate, span, func(i int) (string, error) {
		body := fmt.Sprintf(`{"account":%q,"recipients":[%q],"content":{"text":"bench accept"}}`, r.acct.Name, r.people[i%len(r.people)])
		req, _ := http.NewRequest("POST", r.h.url+"/api/v1/messages", bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != http.StatusAccepted {
			return "", fmt.Errorf("status %d", resp.StatusCode)
		}
		mu.Lock()
		took = append(took, d)
		mu.Unlock()
		return "", nil
	})
	p50, p99 = percentiles(took)
	return p50, p99, failed
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
			msgs, err := r.h.app.Store.MessagesOfBatch(context.Background(), id, 1)
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
	if os.Getenv("HERALD_TEST_MYSQL_DSN") == "" || os.Getenv("HERALD_TEST_REDIS_URL") == "" {
		b.Skip("set HERALD_TEST_MYSQL_DSN and HERALD_TEST_REDIS_URL (make bench does)")
	}
	rows := envInt("HERALD_BENCH_DASHBOARD_ROWS", 1000000)
	env := map[string]string{
		"HERALD_DATA_DIR": b.TempDir(), "HERALD_ADMIN_PASSWORD": testAdminPassword, "HERALD_DEMO": "true",
		"HERALD_MYSQL_DSN": testenv.MySQLDSN(b), "HERALD_REDIS_URL": testenv.RedisURL(b),
		"HERALD_SESSION_SECRET": "bench-session-secret-0123456789abcdef", "HERALD_SECRET_KEY": "bench-secret-key-0123456789abcdef0123",
	}
	h := startHerald(b, env)
	db := h.app.Store.SQL()
	// A thousand real rows, then copied in SQL (50,000 at a time, which a default
	// buffer pool can lock) until there are enough.
	ctx := context.Background()
	d := &dispatch.Dispatcher{Store: h.app.Store, Enqueuer: h.app.Enqueuer, Log: h.app.Log, Location: h.app.Config.Location}
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
	resp, err := client.PostForm(h.url+"/login", map[string][]string{"username": {"admin"}, "password": {testAdminPassword}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		b.Fatalf("login: %v %v", resp, err)
	}
	resp.Body.Close()
	var took []time.Duration
	b.ResetTimer()
	for range max(b.N, 200) {
		start := time.Now()
		resp, err := client.Get(h.url + "/dashboard/live")
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
// messages offered at 200/s for 10 s, each with a send_at 2 to 6 s ahead, one worker;
// it reports the percentiles of sent_at − send_at. Asynq moves due scheduled and retry
// tasks to the queues every DelayedTaskCheckInterval (tasks.NewWorker), which bounds the
// lateness from below.
func BenchmarkScheduledLateness(b *testing.B) {
	if os.Getenv("HERALD_TEST_MYSQL_DSN") == "" || os.Getenv("HERALD_TEST_REDIS_URL") == "" {
		b.Skip("set HERALD_TEST_MYSQL_DSN and HERALD_TEST_REDIS_URL (make bench does)")
	}
	for range b.N {
		rig := newBenchRig(b, 2000)
		worker := startHeraldAs(b, rig.env, "worker")
		d := &dispatch.Dispatcher{Store: rig.h.app.Store, Enqueuer: rig.h.app.Enqueuer, Log: rig.h.app.Log, Location: rig.h.app.Config.Location}
		batchIDs, failed := offer(b, 200, 10*time.Second, func(i int) (string, error) {
			at := time.Now().Add(2*time.Second + time.Duration(i%5)*time.Second)
			res, err := d.Submit(context.Background(), dispatch.Request{Source: "api", Actor: "bench", Account: rig.acct.Name,
				Recipients: []string{rig.people[i%len(rig.people)]}, Text: "bench scheduled", SendAt: &at})
			if err != nil {
				return "", err
			}
			return res.Batch.ID, nil
		})
		var late []time.Duration
		p50, p99 := rig.sentLatency(b, batchIDs, func(m *models.Message) time.Duration {
			late = append(late, m.SentAt.Sub(m.SendAt))
			return late[len(late)-1]
		})
		worker.stop()
		// Asynq keeps a task's ProcessAt in whole seconds, so a send_at with a fraction
		// of a second may go out up to that fraction early (see models.claimEarly).
		earliest := slices.Min(late)
		b.ReportMetric(float64(p50.Microseconds())/1000, "scheduled_late_p50_ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, "scheduled_late_p99_ms")
		b.ReportMetric(float64(earliest.Microseconds())/1000, "scheduled_earliest_ms")
		fmt.Fprintf(os.Stderr, "\nscheduled sends: %d offered at 200/s, %d failed; sent_at − send_at p50 %s p99 %s, earliest %s\n",
			len(batchIDs), failed, p50, p99, earliest)
	}
}
