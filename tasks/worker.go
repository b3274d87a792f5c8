package tasks

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// WorkerOptions configure the Asynq servers that run the handlers.
type WorkerOptions struct {
	Concurrency int
	// TaskCheckInterval is how often a busy worker looks for a task when its queues are
	// empty (HERALD_TASK_CHECK_INTERVAL).
	TaskCheckInterval time.Duration
	// IdleAfter is how long a worker stays quick after its last task or wake-up before it
	// goes back to polling slowly; a minute when zero.
	IdleAfter time.Duration
	// IdleCheckInterval is how often an idle worker looks for a task; a second when zero.
	IdleCheckInterval time.Duration
	Log               *slog.Logger
}

// Worker runs the send, sweep and callback handlers on the three weighted priority
// queues, the maintenance queue and the callback queue, through two Asynq servers.
//
// Asynq's server looks for a task every TaskCheckInterval while its queues are empty and
// sleeps in between, beyond anyone's reach: at 10 ms, which a message's pickup needs, an
// idle worker ran a hundred Redis scripts a second. So a worker keeps one server that
// polls slowly (IdleCheckInterval, one task at a time) for as long as it runs, and
// starts a quick one (TaskCheckInterval, Concurrency tasks) when a wake-up says work
// arrived (wake.go) or the slow one finds a message task itself — the net under a lost
// wake-up. The quick server stops again once the worker has had no task and no wake-up
// for IdleAfter. Maintenance tasks (the sweep and the recovery pass) run on whichever
// server finds them and wake nothing: they come every few seconds whether or not there
// is work.
type Worker struct {
	rdb   redis.UniversalClient
	mux   *asynq.ServeMux
	wakes *wakes
	opts  WorkerOptions
	log   *slog.Logger
	base  asynq.Config

	slow *asynq.Server
	// quick is set while the quick server runs.
	quick atomic.Bool
	// busy counts the message tasks in flight; last is when one started or ended, or a
	// wake-up came (unix ns).
	busy atomic.Int64
	last atomic.Int64
	// starts counts the quick server's starts; selfWoken the message tasks found while
	// it was stopped (wake-ups lost, or the moment before one arrived).
	starts    atomic.Int64
	selfWoken atomic.Int64

	stop     context.CancelFunc
	done     chan struct{}
	stopping sync.WaitGroup
}

// Idle-time defaults.
const (
	idleAfter         = time.Minute
	idleCheckInterval = time.Second
	// idleDelayedTaskCheck is how often the slow server moves due tasks of Asynq's
	// scheduled and retry sets to their queues: a script per queue and set, ten a pass.
	// The quick server does so every quarter second for the minute after any work; past
	// that, an alert step that falls due is fired by the escalation poll within two
	// seconds, and a task's retry due more than a minute after the worker's last task may
	// go up to five seconds late.
	idleDelayedTaskCheck = 5 * time.Second
)

// NewWorker returns a worker on redis with the send, sweep and callback handlers
// registered; more may be added with Handle before Start. It wakes on what enq and the
// other processes' enqueuers enqueue.
func NewWorker(redisOpt asynq.RedisConnOpt, enq *Enqueuer, opts WorkerOptions, send *Sender, sweep *Sweeper, callbacks *Callbacks) *Worker {
	rdb, ok := redisOpt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		panic(fmt.Sprintf("tasks: unsupported Redis connection %T", redisOpt))
	}
	if opts.IdleAfter <= 0 {
		opts.IdleAfter = idleAfter
	}
	if opts.IdleCheckInterval <= 0 {
		opts.IdleCheckInterval = idleCheckInterval
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	w := &Worker{rdb: rdb, mux: asynq.NewServeMux(), wakes: enq.wakes, opts: opts, log: opts.Log, done: make(chan struct{})}
	w.base = asynq.Config{
		Queues: Queues,
		// Retries of a task of its own (and alert steps) wait in Asynq's retry and
		// scheduled sets; the default 5 s between checks would add up to 5 s to each.
		// Scheduled sends wait in Herald's schedule instead (schedule.go).
		DelayedTaskCheckInterval: delayedTaskCheck,
		RetryDelayFunc:           func(n int, err error, t *asynq.Task) time.Duration { return retryDelay(n, err) },
		IsFailure:                isFailure,
		ShutdownTimeout:          20 * time.Second,
		Logger:                   asynqLogger{opts.Log.With("component", "asynq")},
		LogLevel:                 asynq.WarnLevel,
	}
	w.mux.Use(w.track)
	if send != nil {
		w.mux.Handle(TypeSendMessage, send)
	}
	if sweep != nil {
		w.mux.Handle(TypeSweep, sweep)
		w.mux.Handle(TypeRecover, sweep)
	}
	if callbacks != nil {
		w.mux.Handle(TypeDeliverCallbacks, callbacks)
	}
	return w
}

// Handle registers a handler for a task type.
func (w *Worker) Handle(taskType string, h asynq.Handler) { w.mux.Handle(taskType, h) }

// Start starts the slow server and the loop that starts and stops the quick one. A
// worker that starts on a backlog (a restart after an outage, a worker added to a
// drain) starts the quick server at once: the wake-ups of what waits were published
// before it listened.
func (w *Worker) Start() error {
	var quick *asynq.Server
	if w.backlog() {
		quick = w.startQuick()
	}
	cfg := w.base
	cfg.Concurrency = 1
	cfg.TaskCheckInterval = w.opts.IdleCheckInterval
	cfg.DelayedTaskCheckInterval = idleDelayedTaskCheck
	w.slow = asynq.NewServerFromRedisClient(w.rdb, cfg)
	if err := w.slow.Start(w.mux); err != nil {
		if quick != nil {
			quick.Shutdown()
		}
		w.rdb.Close()
		return fmt.Errorf("tasks: start worker: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.stop = cancel
	w.wakes.listen(ctx)
	go w.run(ctx, quick)
	return nil
}

// backlog reports whether a queue whose tasks wake the worker holds tasks ready to run;
// false when Redis cannot say (the slow server's poll is the net then).
func (w *Worker) backlog() bool {
	insp := asynq.NewInspectorFromRedisClient(w.rdb)
	for q := range Queues {
		if q == QueueMaintenance {
			continue
		}
		if info, err := insp.GetQueueInfo(q); err == nil && info.Pending > 0 {
			return true
		}
	}
	return false
}

// Shutdown stops both servers, waiting for their tasks as Asynq's Shutdown does, and
// closes the worker's Redis connection.
func (w *Worker) Shutdown() {
	if w.stop == nil {
		return
	}
	w.stop()
	<-w.done
	w.stopping.Wait()
	w.rdb.Close()
}

// wakesWorker reports whether a task of this type means work arrived.
func wakesWorker(taskType string) bool {
	return taskType != TypeSweep && taskType != TypeRecover
}

// track marks a message task's start and end, and wakes the worker when the slow
// server found it.
func (w *Worker) track(h asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		if !wakesWorker(t.Type()) {
			return h.ProcessTask(ctx, t)
		}
		w.busy.Add(1)
		w.touch()
		if !w.quick.Load() {
			w.selfWoken.Add(1)
			w.wakes.queued.ring()
		}
		defer func() {
			w.touch()
			w.busy.Add(-1)
		}()
		return h.ProcessTask(ctx, t)
	})
}

func (w *Worker) touch() { w.last.Store(time.Now().UnixNano()) }

// run starts the quick server on a wake-up (quick is one already started) and stops it
// after IdleAfter without work, until ctx ends; then it stops both servers.
func (w *Worker) run(ctx context.Context, quick *asynq.Server) {
	defer close(w.done)
	idle := time.NewTimer(w.opts.IdleAfter)
	if quick == nil {
		idle.Stop()
	} else {
		w.touch()
	}
	for {
		woke := w.wakes.queued.wait()
		select {
		case <-ctx.Done():
			idle.Stop()
			w.shutdown(w.slow)
			if quick != nil {
				w.shutdown(quick)
			}
			return
		case <-woke:
			w.touch()
			if quick == nil {
				quick = w.startQuick()
				idle.Reset(w.opts.IdleAfter)
			}
		case <-idle.C:
			left := w.opts.IdleAfter - time.Duration(time.Now().UnixNano()-w.last.Load())
			if left > 0 || w.busy.Load() > 0 {
				idle.Reset(max(left, w.opts.IdleAfter/10))
				continue
			}
			w.quick.Store(false)
			w.shutdown(quick)
			quick = nil
		}
	}
}

// startQuick starts a quick server; should it fail, the slow one goes on alone.
func (w *Worker) startQuick() *asynq.Server {
	cfg := w.base
	cfg.Concurrency = w.opts.Concurrency
	cfg.TaskCheckInterval = w.opts.TaskCheckInterval
	srv := asynq.NewServerFromRedisClient(w.rdb, cfg)
	if err := srv.Start(w.mux); err != nil {
		w.log.Warn("tasks: the quick worker did not start; tasks are picked up slowly", "error", err)
		return nil
	}
	w.quick.Store(true)
	w.starts.Add(1)
	return srv
}

// shutdown shuts srv down in the background: it waits for the server's tasks, which
// must not hold up the loop.
func (w *Worker) shutdown(srv *asynq.Server) {
	if srv == nil {
		return
	}
	w.stopping.Add(1)
	go func() {
		defer w.stopping.Done()
		srv.Shutdown()
	}()
}
