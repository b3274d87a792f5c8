package tasks_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"herald/internal/testenv"
	"herald/tasks"
)

// idleRig is a worker whose send handler records what it ran, and holds a task whose
// id is in hold until its channel is closed.
type idleRig struct {
	red    *tasks.Redis
	worker *tasks.Worker
	mu     sync.Mutex
	ran    map[string]int // task id → runs
	hold   map[string]chan struct{}
}

func newIdleRig(t *testing.T) *idleRig {
	t.Helper()
	r := newStoppedIdleRig(t)
	r.start(t)
	return r
}

// newStoppedIdleRig is an idle rig whose worker is not started yet.
func newStoppedIdleRig(t *testing.T) *idleRig {
	t.Helper()
	red, err := tasks.ParseRedisURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	r := &idleRig{red: red, ran: map[string]int{}, hold: map[string]chan struct{}{}}
	enq := tasks.NewEnqueuer(red.Asynq())
	t.Cleanup(func() { enq.Close() })
	r.worker = tasks.NewWorker(red.Asynq(), enq, tasks.WorkerOptions{Concurrency: 4, TaskCheckInterval: 10 * time.Millisecond,
		IdleAfter: 300 * time.Millisecond, IdleCheckInterval: 200 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, nil, nil, nil)
	r.worker.Handle(tasks.TypeSendMessage, asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		r.mu.Lock()
		r.ran[id]++
		hold := r.hold[id]
		r.mu.Unlock()
		if hold != nil {
			<-hold
		}
		return nil
	}))
	return r
}

func (r *idleRig) start(t *testing.T) {
	t.Helper()
	if err := r.worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.worker.Shutdown)
}

// otherProcess is an enqueuer of another process; lost drops every wake-up it would
// publish.
func (r *idleRig) otherProcess(t *testing.T, lost bool) *tasks.Enqueuer {
	enq := tasks.NewEnqueuer(r.red.Asynq())
	t.Cleanup(func() { enq.Close() })
	if lost {
		enq.DropWakes()
	}
	return enq
}

func (r *idleRig) enqueue(t *testing.T, enq *tasks.Enqueuer, ids ...string) {
	t.Helper()
	jobs := make([]tasks.Job, len(ids))
	for i, id := range ids {
		jobs[i] = tasks.Single(id, "normal", time.Now(), "")
	}
	if n, err := enq.Enqueue(context.Background(), jobs); err != nil || n != len(ids) {
		t.Fatalf("enqueued %d of %d: %v", n, len(ids), err)
	}
}

// waitRan waits up to 10 s until each id has run, and returns the runs by id.
func (r *idleRig) waitRan(t *testing.T, ids ...string) map[string]int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		all := true
		for _, id := range ids {
			all = all && r.ran[id] > 0
		}
		got := make(map[string]int, len(ids))
		for _, id := range ids {
			got[id] = r.ran[id]
		}
		r.mu.Unlock()
		if all || time.Now().After(deadline) {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLostWakeUpLosesNoTask: an idle worker polls slowly; tasks another process
// enqueues while its wake-ups are all lost still run, each once — the slow poll finds
// the first, which wakes the worker itself — and the worker goes back to idle after its
// quiet period. A wake-up that does arrive starts the quick server.
func TestLostWakeUpLosesNoTask(t *testing.T) {
	r := newIdleRig(t)
	if r.worker.Quick() {
		t.Fatal("the quick server runs before any work arrived")
	}

	ids := []string{"lost-1", "lost-2", "lost-3", "lost-4", "lost-5"}
	r.enqueue(t, r.otherProcess(t, true), ids...)
	got := r.waitRan(t, ids...)
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("task %s ran %d times, want once", id, got[id])
		}
	}
	if r.worker.SelfWoken() == 0 {
		t.Error("the worker never woke itself: the tasks' wake-ups were not lost")
	}
	if n := r.worker.QuickStarts(); n != 1 {
		t.Errorf("the quick server started %d times after the slow poll found work, want 1", n)
	}
	waitFor(t, "the worker to go idle", func() bool { return !r.worker.Quick() })

	r.enqueue(t, r.otherProcess(t, false), "woken")
	waitFor(t, "a wake-up to start the quick server", func() bool { return r.worker.QuickStarts() == 2 })
	if got := r.waitRan(t, "woken"); got["woken"] != 1 {
		t.Errorf("task woken ran %d times, want once", got["woken"])
	}
}

// TestWorkerStartsQuickOnABacklog: a worker that starts with tasks waiting, whose
// wake-ups were published before it listened, runs them at once on its quick server
// instead of finding the first on its slow poll up to a poll later.
func TestWorkerStartsQuickOnABacklog(t *testing.T) {
	r := newStoppedIdleRig(t)
	ids := []string{"backlog-1", "backlog-2", "backlog-3"}
	r.enqueue(t, r.otherProcess(t, false), ids...)
	r.start(t)
	if !r.worker.Quick() {
		t.Error("the worker started slow with a backlog waiting")
	}
	got := r.waitRan(t, ids...)
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("task %s ran %d times, want once", id, got[id])
		}
	}
	if n := r.worker.SelfWoken(); n != 0 {
		t.Errorf("the slow poll found %d of the backlog's tasks, want none", n)
	}
	waitFor(t, "the worker to go idle after the backlog", func() bool { return !r.worker.Quick() })
}

// TestWorkerStaysQuickWhileATaskRuns: the quick server is not stopped under a message
// task that runs longer than the quiet period (stopping it would have Asynq hand the task
// back after its shutdown timeout, to run again); once the task ends, the quiet period
// counts from then.
func TestWorkerStaysQuickWhileATaskRuns(t *testing.T) {
	r := newIdleRig(t)
	release := make(chan struct{})
	r.mu.Lock()
	r.hold["long"] = release
	r.mu.Unlock()
	r.enqueue(t, r.otherProcess(t, false), "long")
	waitFor(t, "the long task to start", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.ran["long"] == 1 })
	// Three quiet periods (300 ms each) pass while the task runs.
	for range 9 {
		time.Sleep(100 * time.Millisecond)
		if !r.worker.Quick() {
			t.Fatal("the quick server stopped while a message task was running")
		}
	}
	close(release)
	waitFor(t, "the worker to go idle after the task", func() bool { return !r.worker.Quick() })
	if got := r.waitRan(t, "long"); got["long"] != 1 {
		t.Errorf("the long task ran %d times, want once", got["long"])
	}
}
