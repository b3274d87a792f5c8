package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"herald/models"
)

// Sweeper keeps MySQL and Redis in step: it returns messages whose worker died to failed,
// and re-enqueues due messages whose task Redis no longer has, or holds as active with
// no worker on it. It makes Redis disposable.
//
// The second case follows a Redis failover: a worker's "done" or "retry" for a task that
// reached the old master after the replica was promoted is lost, and the new master
// keeps the task active until Asynq's lease recovery, one to two minutes later. A due
// message that is pending or failed in the database is not being worked on, so its
// active task is stale: the sweeper enqueues the message again under a second task id.
// Should the stale task run after all, the claim in the database sends it only once.
// The second task may go stale in turn; the next sweep then adds a third.
type Sweeper struct {
	Store    *models.Store
	Enqueuer *Enqueuer
	Log      *slog.Logger
	// Inspector, when set, lets Recover find send tasks that a dead worker took from the
	// queue but had not claimed yet (their messages are still pending, so no lease of
	// Herald's expires): Asynq marks them orphaned when its own 30 s lease runs out, and
	// its recoverer would retry them up to a minute and a half after that. The full sweep
	// uses it to find due messages whose task a Redis failover left active.
	Inspector *asynq.Inspector
	// Grace is how long past due a message must be before the sweeper looks at it, so it
	// does not race a task that is about to run anyway.
	Grace time.Duration

	mu sync.Mutex
	// unclaimed: active send tasks whose message was due and unclaimed when a pass of
	// this sweeper saw them, task id → first seen.
	unclaimed map[string]time.Time
}

// stuckAfter is how long an active send task may hold a due message without claiming
// it before Recover takes its worker for dead. A live worker claims within milliseconds
// of taking a task; the claim, not this guess, is what keeps a message from going twice.
const stuckAfter = 2 * time.Second

// sweepPage is how many due messages one query returns.
const sweepPage = 2000

// ProcessTask implements asynq.Handler for TypeSweep and TypeRecover.
func (s *Sweeper) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var err error
	if t.Type() == TypeRecover {
		_, err = s.Recover(ctx)
	} else {
		_, err = s.Sweep(ctx)
	}
	return err
}

// Recover returns messages whose claim expired (their worker died) to failed and
// enqueues each again at once under a task id of its own, so they do not wait for Asynq
// to notice the dead worker. It reports how many it re-enqueued.
func (s *Sweeper) Recover(ctx context.Context) (int, error) {
	sends, err := s.activeSends()
	return s.recover(ctx, sends, err)
}

// recover is Recover with the active send tasks already listed (listErr, if they could
// not all be read).
func (s *Sweeper) recover(ctx context.Context, sends []activeSend, listErr error) (int, error) {
	released, err := s.Store.ReleaseExpiredLeases(ctx)
	if len(released) > 0 {
		s.Log.Warn("sweeper: released expired claims; their attempts are recorded as unknown", "count", len(released))
	}
	now := models.Now()
	jobs := make([]Job, len(released))
	for i, r := range released {
		jobs[i] = Job{MessageID: r.ID, Priority: r.Priority, ProcessAt: now, Replaces: r.ExpiredToken}
	}
	jobs = append(jobs, s.orphanedSends(sends, now)...)
	stuck, serr := s.stuckSends(ctx, sends, now)
	jobs = append(jobs, stuck...)
	// Released rows are failed and due: if enqueueing fails, the full sweep finds them.
	n, qerr := s.Enqueuer.Enqueue(ctx, jobs)
	return n, errors.Join(err, listErr, serr, qerr)
}

// stuckSends returns a replacement job for every send task that a dead worker took from
// the queue but never claimed: the task is active in Redis, not yet orphaned (Asynq
// waits 30 s for that), and its message stays due and unclaimed over passes at least
// stuckAfter apart. The replacement gets the id the orphan path would give it, so the
// task is replaced once however it is found.
func (s *Sweeper) stuckSends(ctx context.Context, active []activeSend, now time.Time) ([]Job, error) {
	byMessage := make(map[string][]activeSend)
	ids := make([]string, 0, len(active))
	for _, t := range active {
		if !t.orphaned {
			if len(byMessage[t.messageID]) == 0 {
				ids = append(ids, t.messageID)
			}
			byMessage[t.messageID] = append(byMessage[t.messageID], t)
		}
	}
	var due []models.DueMessage
	for chunk := range slices.Chunk(ids, stuckPage) {
		d, err := s.Store.UnclaimedDue(ctx, chunk, now)
		if err != nil {
			return nil, err
		}
		due = append(due, d...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]time.Time, len(due))
	var jobs []Job
	for _, m := range due {
		for _, t := range byMessage[m.ID] {
			first, ok := s.unclaimed[t.taskID]
			if !ok {
				first = now
			}
			seen[t.taskID] = first
			if now.Sub(first) >= stuckAfter {
				jobs = append(jobs, Job{MessageID: m.ID, Priority: m.Priority, ProcessAt: now, Replaces: "orphan-" + t.taskID})
			}
		}
	}
	s.unclaimed = seen
	if len(jobs) > 0 {
		s.Log.Warn("sweeper: re-enqueued send tasks a dead worker took but never claimed", "count", len(jobs))
	}
	return jobs, nil
}

// stuckPage is how many message ids one UnclaimedDue query asks about.
const stuckPage = 500

// orphanedSends returns a replacement job for every send task Asynq reports orphaned.
// The replacement's task id is fixed by the orphan's, so later passes that still see the
// orphan do not enqueue it again while the replacement waits.
func (s *Sweeper) orphanedSends(active []activeSend, now time.Time) []Job {
	var jobs []Job
	for _, t := range active {
		if t.orphaned {
			jobs = append(jobs, Job{MessageID: t.messageID, Priority: t.queue, ProcessAt: now, Replaces: "orphan-" + t.taskID})
		}
	}
	if len(jobs) > 0 {
		s.Log.Warn("sweeper: re-enqueued send tasks orphaned by a dead worker", "count", len(jobs))
	}
	return jobs
}

// Sweep runs one full pass: Recover, then re-enqueue due messages whose task Redis lost,
// then housekeeping. It reports how many tasks it enqueued.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	sends, listErr := s.activeSends()
	if listErr != nil {
		s.Log.Warn("sweeper: stale tasks of some queues wait for the next sweep", "error", listErr)
	}
	total, err := s.recover(ctx, sends, nil)
	if err != nil {
		return total, err
	}
	dueBy := models.Now().Add(-s.Grace)
	active := make(map[string]bool, len(sends))
	for _, t := range sends {
		active[t.messageID] = true
	}
	// Second tasks get this sweep's mark: one of an earlier sweep may be stale too.
	sweepID := strconv.FormatInt(time.Now().UnixNano(), 36)
	stale := 0
	var after models.DueCursor
	for {
		due, err := s.Store.DueMessages(ctx, dueBy, after, sweepPage)
		if err != nil {
			return total, err
		}
		jobs := make([]Job, len(due))
		for i, m := range due {
			jobs[i] = Job{MessageID: m.ID, Priority: m.Priority, ProcessAt: m.NextAttemptAt}
			if active[m.ID] {
				jobs[i].Replaces = "stale-" + sweepID
				stale++
			}
		}
		n, err := s.Enqueuer.Enqueue(ctx, jobs)
		total += n
		if err != nil {
			return total, err
		}
		if len(due) < sweepPage {
			break
		}
		last := due[len(due)-1]
		after = models.DueCursor{At: last.NextAttemptAt, ID: last.ID}
	}
	if total > 0 {
		s.Log.Warn("sweeper: re-enqueued messages whose task was missing or stale", "count", total, "stale", stale)
	}
	s.housekeeping(ctx)
	return total, nil
}

// activePage is how many active tasks one read returns.
const activePage = 1000

// activeSend is a send task Redis holds as active.
type activeSend struct {
	messageID, taskID, queue string
	// orphaned: its worker stopped extending Asynq's lease on it.
	orphaned bool
}

// activeSends lists the send tasks Redis holds as active in every queue. A queue that
// cannot be read is skipped and reported: its tasks wait for the next pass.
func (s *Sweeper) activeSends() ([]activeSend, error) {
	if s.Inspector == nil {
		return nil, nil
	}
	var out []activeSend
	var errs []error
	for queue := range MessageQueues {
		for page := 1; ; page++ {
			list, err := s.Inspector.ListActiveTasks(queue, asynq.PageSize(activePage), asynq.Page(page))
			if errors.Is(err, asynq.ErrQueueNotFound) {
				break
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("tasks: list active tasks of %s: %w", queue, err))
				break
			}
			for _, t := range list {
				if t.Type != TypeSendMessage {
					continue
				}
				if p, err := parseSendPayload(t.Payload); err == nil {
					out = append(out, activeSend{messageID: p.MessageID, taskID: t.ID, queue: queue, orphaned: t.IsOrphaned})
				}
			}
			if len(list) < activePage {
				break
			}
		}
	}
	return out, errors.Join(errs...)
}

// housekeeping prunes rows that only matter for a while: expired sessions, idempotency
// keys past their 24 hours and old throttle windows. Failures are logged, not returned:
// they must not hold up the sweep.
func (s *Sweeper) housekeeping(ctx context.Context) {
	if err := s.Store.DeleteExpiredSessions(ctx); err != nil {
		s.Log.Warn("sweeper: prune sessions", "error", err)
	}
	if _, err := s.Store.DeleteExpiredIdempotencyKeys(ctx); err != nil {
		s.Log.Warn("sweeper: prune idempotency keys", "error", err)
	}
	if err := s.Store.DeleteThrottleWindowsBefore(ctx, models.Now().Add(-24*time.Hour)); err != nil {
		s.Log.Warn("sweeper: prune throttle windows", "error", err)
	}
}
