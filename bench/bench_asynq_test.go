package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"herald/internal/testenv"
	"herald/tasks"
)

// rawAsynqQueues are the queues of the raw Asynq no-op: three, weighted as Herald's
// message queues are (high 6, normal 3, low 1). Their names are the benchmark's own, so
// that a Herald worker on the same Redis does not take the tasks.
var rawAsynqQueues = map[string]int{"bench-noop-high": 6, "bench-noop-normal": 3, "bench-noop-low": 1}

const (
	// rawAsynqConcurrency and rawAsynqCheckInterval are Asynq's settings at its best on
	// a small machine (issue 39), not Herald's worker settings.
	rawAsynqConcurrency   = 50
	rawAsynqCheckInterval = 10 * time.Millisecond

	// rawAsynqEnv carries a rawAsynqParams, as JSON, to the child process; the child
	// test skips itself without it.
	rawAsynqEnv = "HERALD_BENCH_RAW_ASYNQ"
	// rawAsynqPrefix starts the child's one line of result on its stdout.
	rawAsynqPrefix = "raw-asynq-result "
)

// rawAsynqParams is what the benchmark tells the child process.
type rawAsynqParams struct {
	RedisURL string `json:"redis_url"`
	// Tasks is how many tasks wait in rawAsynqQueues; the child stops after handling
	// that many.
	Tasks int `json:"tasks"`
}

// rawAsynqResult is what the child process measured, from just before its Asynq server
// started to the moment it handled the last task.
type rawAsynqResult struct {
	Tasks int           `json:"tasks"`
	Took  time.Duration `json:"took"`
	// CPU is the child's own CPU time in that span, RedisCPU the local redis-server's
	// (-1 when none runs on this machine).
	CPU      time.Duration `json:"cpu"`
	RedisCPU time.Duration `json:"redis_cpu"`
}

// rate is tasks handled per second.
func (r rawAsynqResult) rate() float64 { return float64(r.Tasks) / r.Took.Seconds() }

// rawAsynqNoop measures raw Asynq at its best on this machine: HERALD_BENCH_NOOP_TASKS
// (30,000 by default) no-op tasks enqueued beforehand into rawAsynqQueues of the test's
// Redis, spread in proportion to the
// weights, then handled by an Asynq server of its own settings in a process of its own
// (this test binary, re-run for TestRawAsynqNoopProcess), which shares no Go runtime
// with the benchmark. The spread follows the weights because Asynq tries a server's
// queues one Redis call after another in a weighted random order: with every queue
// holding tasks until near the end, the first try almost always finds one, which is
// Asynq's fastest path (all in normal costs an empty try of high most of the time).
func rawAsynqNoop(b *testing.B) rawAsynqResult {
	n, redisURL := envInt("HERALD_BENCH_NOOP_TASKS", 30000), testenv.RedisURL(b)
	red, err := tasks.ParseRedisURL(redisURL)
	if err != nil {
		b.Fatal(err)
	}
	// Leftovers of an earlier run would be counted as handled: start from empty queues.
	insp := asynq.NewInspector(red.Asynq())
	defer insp.Close()
	var spread []string
	for q, weight := range rawAsynqQueues {
		if err := insp.DeleteQueue(q, true); err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
			b.Fatalf("raw asynq: empty queue %s: %v", q, err)
		}
		for range weight {
			spread = append(spread, q)
		}
	}
	enqueueNoops(b, red.Asynq(), n, func(i int) string { return spread[i%len(spread)] })

	params, err := json.Marshal(rawAsynqParams{RedisURL: redisURL, Tasks: n})
	if err != nil {
		b.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestRawAsynqNoopProcess$", "-test.timeout=10m")
	child.Env = append(os.Environ(), rawAsynqEnv+"="+string(params))
	child.Stderr = os.Stderr
	out, err := child.Output()
	if err != nil {
		b.Fatalf("raw asynq process: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if raw, ok := strings.CutPrefix(line, rawAsynqPrefix); ok {
			var res rawAsynqResult
			if err := json.Unmarshal([]byte(raw), &res); err != nil {
				b.Fatalf("raw asynq process said %q: %v", line, err)
			}
			return res
		}
	}
	b.Fatalf("raw asynq process gave no result:\n%s", out)
	return rawAsynqResult{}
}

// TestRawAsynqNoopProcess is the child process of rawAsynqNoop: an Asynq server with
// rawAsynqConcurrency workers on rawAsynqQueues handles the tasks waiting there as
// no-ops, and the test prints what it measured on stdout. It skips itself unless
// rawAsynqEnv is set.
func TestRawAsynqNoopProcess(t *testing.T) {
	raw := os.Getenv(rawAsynqEnv)
	if raw == "" {
		t.Skip("the raw Asynq benchmark's child process: BenchmarkPipeline runs it")
	}
	var p rawAsynqParams
	if err := json.Unmarshal([]byte(raw), &p); err != nil || p.Tasks <= 0 {
		t.Fatalf("%s=%q: want {\"redis_url\": …, \"tasks\": n > 0} (%v)", rawAsynqEnv, raw, err)
	}
	red, err := tasks.ParseRedisURL(p.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	var (
		handled  atomic.Int64
		lastDone time.Time
		finished = make(chan struct{})
	)
	srv := asynq.NewServer(red.Asynq(), asynq.Config{Concurrency: rawAsynqConcurrency, Queues: rawAsynqQueues,
		TaskCheckInterval: rawAsynqCheckInterval, LogLevel: asynq.FatalLevel})
	cpu, redis, start := processCPU(), testenv.RedisCPU(), time.Now()
	if err := srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		if handled.Add(1) == int64(p.Tasks) {
			lastDone = time.Now()
			close(finished)
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	select {
	case <-finished:
	case <-time.After(5 * time.Minute):
		t.Fatalf("%d of %d tasks handled after 5 minutes", handled.Load(), p.Tasks)
	}
	res := rawAsynqResult{Tasks: p.Tasks, Took: lastDone.Sub(start), CPU: processCPU() - cpu, RedisCPU: testenv.RedisCPU() - redis}
	if redis < 0 {
		res.RedisCPU = -1
	}
	line, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s%s\n", rawAsynqPrefix, line)
}

// enqueueNoops enqueues n no-op tasks from 8 goroutines, task i into queueOf(i).
func enqueueNoops(b *testing.B, opt asynq.RedisConnOpt, n int, queueOf func(i int) string) {
	client := asynq.NewClient(opt)
	defer client.Close()
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if _, err := client.Enqueue(asynq.NewTask("bench:noop", nil), asynq.Queue(queueOf(i))); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
