package tasks

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"herald/models"
)

// Scheduled sends, retries and throttled messages that wait inside a chunk wait in
// Herald's own schedule until they are due, not in Asynq's: Asynq keeps a task's run
// time in whole seconds and moves due tasks only every DelayedTaskCheckInterval, so its
// tasks start up to a second early (the worker then held a slot waiting for the due
// time) or a quarter of a second late, which put the slowest scheduled sends 0.6 s late
// (BenchmarkScheduledLateness, docs/benchmarks.md).
//
// The schedule is a Redis sorted set per message queue, task id → due time in
// milliseconds, beside a hash of the tasks' payloads. A Forwarder in every worker process
// takes the jobs off it as they fall due and enqueues them in their queue to run at
// once. Taking them is one script, so with several workers each job is taken once.
//
// MySQL stays the source of truth. When Redis loses the whole schedule (a flush, a
// restart without persistence, as the in-process Redis has at every start) the mark the
// forwarders keep beside it is gone too: the first forwarder to see that sets it again
// and has the sweeper put back every waiting message whose task Redis does not hold
// (Sweeper.Reschedule), so messages due later still go out on time. A job lost alone (a failover that lost the last
// writes, a process that died between taking a job and enqueueing it) leaves its
// messages waiting in the database, where the sweeper finds them once they are due. A
// job that reaches Asynq twice sends once: the claim in the database decides.

//go:embed schedule.lua
var scheduleLua string

var takeDueScript = redis.NewScript(scheduleLua)

// scheduleKey is the sorted set of a queue's scheduled jobs. Every key of the schedule
// has one hash tag, so that a Redis Cluster keeps them in one slot for the script.
func scheduleKey(queue string) string { return "herald:{schedule}:" + queue }

// scheduleJobsKey is the hash of a queue's scheduled jobs' payloads.
func scheduleJobsKey(queue string) string { return scheduleKey(queue) + ":jobs" }

// scheduleQueues are the message queues in the order due jobs are taken: the most
// urgent first, should more fall due at once than one pass takes.
var scheduleQueues = []string{QueueHigh, QueueNormal, QueueLow}

// scheduleMarkKey is set while Redis keeps the schedule; it holds when a forwarder last
// found the schedule lost and set it (ms).
const scheduleMarkKey = "herald:{schedule}:kept"

// scheduleKeys are the script's keys: each queue's sorted set, then its hash; last the
// mark.
var scheduleKeys = func() []string {
	var keys []string
	for _, q := range scheduleQueues {
		keys = append(keys, scheduleKey(q), scheduleJobsKey(q))
	}
	return append(keys, scheduleMarkKey)
}()

// schedule adds jobs to the schedule, each due at its ProcessAt, in one round trip. A
// job already scheduled under its task id takes the new due time and payload: the
// latest writer has read the message last. It returns how many jobs were new.
func (e *Enqueuer) schedule(ctx context.Context, jobs []Job) (int, error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	added := make([]*redis.IntCmd, len(jobs))
	_, err := e.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, j := range jobs {
			queue := QueueFor(j.Priority)
			// The payload first: the forwarder skips a job whose payload is missing.
			p.HSet(ctx, scheduleJobsKey(queue), j.TaskID, sendPayload(j.MessageIDs))
			added[i] = p.ZAdd(ctx, scheduleKey(queue), redis.Z{Score: float64(j.ProcessAt.UnixMilli()), Member: j.TaskID})
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("tasks: schedule %d tasks: %w", len(jobs), err)
	}
	e.wakes.tell(ctx, wakeScheduled)
	n := 0
	for _, c := range added {
		n += int(c.Val())
	}
	return n, nil
}

// Scheduled returns how many jobs of a message queue wait in the schedule.
func (e *Enqueuer) Scheduled(ctx context.Context, queue string) (int, error) {
	n, err := e.rdb.ZCard(ctx, scheduleKey(queue)).Result()
	if err != nil {
		return 0, fmt.Errorf("tasks: count scheduled tasks of %s: %w", queue, err)
	}
	return int(n), nil
}

// ScheduledAt returns when the job with this task id is due in a message queue's
// schedule, and false when the schedule does not hold it.
func (e *Enqueuer) ScheduledAt(ctx context.Context, queue, taskID string) (time.Time, bool, error) {
	score, err := e.rdb.ZScore(ctx, scheduleKey(queue), taskID).Result()
	switch {
	case err == redis.Nil:
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("tasks: read scheduled task %s: %w", taskID, err)
	}
	return time.UnixMilli(int64(score)), true, nil
}

// ScheduledPayload returns the payload of the job with this task id in a message
// queue's schedule, and false when the schedule does not hold it.
func (e *Enqueuer) ScheduledPayload(ctx context.Context, queue, taskID string) ([]byte, bool, error) {
	payload, err := e.rdb.HGet(ctx, scheduleJobsKey(queue), taskID).Bytes()
	switch {
	case err == redis.Nil:
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("tasks: read scheduled task %s: %w", taskID, err)
	}
	return payload, true, nil
}

// Forwarder moves jobs from the schedule to their Asynq queues as they fall due. Every
// worker process runs one (NewForwarder, Run).
type Forwarder struct {
	enq     *Enqueuer
	sweeper *Sweeper
	log     *slog.Logger
	now     func() time.Time
	// rescheduling is set while a Reschedule this forwarder started runs.
	rescheduling atomic.Bool
	// awake is until when the forwarder polls at forwardPoll rather than forwardIdle.
	awake time.Time
}

// NewForwarder returns a forwarder that enqueues through enq, has sweeper put the
// waiting messages back when it finds the schedule lost, and logs to log
// (slog.Default() when nil).
func NewForwarder(enq *Enqueuer, sweeper *Sweeper, log *slog.Logger) (*Forwarder, error) {
	switch {
	case enq == nil:
		return nil, errors.New("tasks: a forwarder needs an enqueuer")
	case sweeper == nil:
		return nil, errors.New("tasks: a forwarder needs a sweeper: without one a lost schedule waits for the messages to fall due")
	}
	if log == nil {
		log = slog.Default()
	}
	return &Forwarder{enq: enq, sweeper: sweeper, log: log, now: time.Now}, nil
}

// Timing of the forwarder's passes.
//
// A pass sleeps until the earliest job it left is due, so a job scheduled ahead goes to
// its queue within a millisecond or two of its due time. A job added after the pass with
// an earlier due time rings the schedule's bell (wake.go), in this process or through
// Redis, and the forwarder passes at once. For forwardAwake after a wake-up or a pass
// that found work it also polls every forwardPoll, which covers the wake-ups coalesced
// away; otherwise every forwardIdle, which bounds how late a job is whose wake-up was
// lost, and costs one short script a poll. forwardGap is the least time between passes,
// so that at thousands of jobs a second a pass takes several at once instead of waking
// for every millisecond.
const (
	forwardPoll  = 20 * time.Millisecond
	forwardIdle  = time.Second
	forwardAwake = time.Second
	forwardGap   = 2 * time.Millisecond
	forwardBatch = 500
	// forwardRetry is the wait after Redis failed a pass.
	forwardRetry = time.Second
)

// Run forwards due jobs until ctx ends.
func (f *Forwarder) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		woke := f.enq.wakes.scheduled.wait()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-woke:
			f.awake = f.now().Add(forwardAwake)
		}
		t.Reset(f.pass(ctx))
	}
}

// pass forwards what is due and returns how long to wait before the next pass.
func (f *Forwarder) pass(ctx context.Context) time.Duration {
	due, err := f.takeDue(ctx)
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("scheduled tasks not forwarded; trying again", "error", err)
		}
		return forwardRetry
	}
	if due.lost {
		f.reschedule(ctx)
	}
	now := f.now()
	if len(due.jobs) > 0 {
		f.awake = now.Add(forwardAwake)
		// Should Redis refuse one, its messages wait in the database for the sweeper.
		if _, err := f.enq.enqueueNow(ctx, due.jobs); err != nil && ctx.Err() == nil {
			f.log.Warn("due scheduled tasks not enqueued; the sweeper will", "error", err)
		}
	}
	if due.taken == forwardBatch {
		return 0 // more are due
	}
	poll := forwardIdle
	if now.Before(f.awake) {
		poll = forwardPoll
	}
	if due.next.IsZero() {
		return poll
	}
	return min(poll, max(due.next.Sub(now), forwardGap))
}

// reschedule has the sweeper put back the waiting messages whose task Redis lost, in the
// background: the forwarder goes on forwarding what is scheduled meanwhile.
func (f *Forwarder) reschedule(ctx context.Context) {
	if !f.rescheduling.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer f.rescheduling.Store(false)
		n, err := f.sweeper.Reschedule(ctx)
		if err != nil && ctx.Err() == nil {
			f.log.Warn("the schedule was lost and not all waiting messages were put back; the sweeper finds the rest when they are due",
				"tasks", n, "error", err)
		}
		if err == nil {
			f.log.Info("the schedule was lost (Redis emptied); waiting messages put back from the database", "tasks", n)
		}
	}()
}

// dueJobs is what one pass took off the schedule.
type dueJobs struct {
	jobs []Job
	// taken counts the jobs the script returned, with any whose payload was bad.
	taken int
	// next is when the earliest job left is due; zero when none is.
	next time.Time
	// lost: the schedule's mark was missing.
	lost bool
}

// takeDue takes the jobs due by now off the schedule, at most forwardBatch, the most
// urgent queues first.
func (f *Forwarder) takeDue(ctx context.Context) (dueJobs, error) {
	var out dueJobs
	res, err := takeDueScript.Run(ctx, f.enq.rdb, scheduleKeys, f.now().UnixMilli(), forwardBatch).Slice()
	switch {
	case err != nil:
		return out, fmt.Errorf("tasks: take due scheduled tasks: %w", err)
	case len(res) < 2:
		return out, fmt.Errorf("tasks: take due scheduled tasks: the script answered %v", res)
	}
	if next, _ := res[0].(int64); next >= 0 {
		out.next = time.UnixMilli(next)
	}
	lost, _ := res[1].(int64)
	out.lost = lost == 1
	for i := 2; i+2 < len(res); i += 3 {
		out.taken++
		q, _ := res[i].(int64)
		id, _ := res[i+1].(string)
		raw, _ := res[i+2].(string)
		var p SendMessagePayload
		if q < 1 || int(q) > len(scheduleQueues) || json.Unmarshal([]byte(raw), &p) != nil || len(p.IDs()) == 0 {
			f.log.Warn("scheduled task with a bad payload dropped; the sweeper finds its messages", "task_id", id)
			continue
		}
		out.jobs = append(out.jobs, Job{TaskID: id, MessageIDs: p.IDs(), Priority: models.Priority(scheduleQueues[q-1])})
	}
	return out, nil
}
