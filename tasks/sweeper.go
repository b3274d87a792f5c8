package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"herald/models"
)

// Sweeper keeps MySQL and Redis in step: it returns messages whose worker died to failed,
// and re-enqueues due messages whose task Redis no longer has. It makes Redis disposable.
type Sweeper struct {
	Store    *models.Store
	Enqueuer *Enqueuer
	Log      *slog.Logger
	// Inspector, when set, lets Recover find send tasks that a dead worker took from the
	// queue but had not claimed yet (their messages are still pending, so no lease of
	// Herald's expires): Asynq marks them orphaned when its own 30 s lease runs out, and
	// its recoverer would retry them up to a minute and a half after that.
	Inspector *asynq.Inspector
	// Grace is how long past due a message must be before the sweeper looks at it, so it
	// does not race a task that is about to run anyway.
	Grace time.Duration
}

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
	released, err := s.Store.ReleaseExpiredLeases(ctx)
	if len(released) > 0 {
		s.Log.Warn("sweeper: released expired claims; their attempts are recorded as unknown", "count", len(released))
	}
	now := models.Now()
	jobs := make([]Job, len(released))
	for i, r := range released {
		jobs[i] = Job{MessageID: r.ID, Priority: r.Priority, ProcessAt: now, Replaces: r.ExpiredToken}
	}
	orphans, oerr := s.orphanedSends(now)
	jobs = append(jobs, orphans...)
	// Released rows are failed and due: if enqueueing fails, the full sweep finds them.
	n, qerr := s.Enqueuer.Enqueue(ctx, jobs)
	return n, errors.Join(err, oerr, qerr)
}

// orphanedSends returns a replacement job for every send task Asynq reports orphaned.
// The replacement's task id is fixed by the orphan's, so later passes that still see the
// orphan do not enqueue it again while the replacement waits.
func (s *Sweeper) orphanedSends(now time.Time) ([]Job, error) {
	if s.Inspector == nil {
		return nil, nil
	}
	const pageSize = 500
	var jobs []Job
	for queue := range Queues {
		for page := 1; ; page++ {
			active, err := s.Inspector.ListActiveTasks(queue, asynq.PageSize(pageSize), asynq.Page(page))
			if errors.Is(err, asynq.ErrQueueNotFound) {
				break
			}
			if err != nil {
				return jobs, fmt.Errorf("tasks: list active tasks of %s: %w", queue, err)
			}
			for _, t := range active {
				if !t.IsOrphaned || t.Type != TypeSendMessage {
					continue
				}
				p, err := parseSendPayload(t.Payload)
				if err != nil {
					continue
				}
				jobs = append(jobs, Job{MessageID: p.MessageID, Priority: queue, ProcessAt: now, Replaces: "orphan-" + t.ID})
			}
			if len(active) < pageSize {
				break
			}
		}
	}
	if len(jobs) > 0 {
		s.Log.Warn("sweeper: re-enqueued send tasks orphaned by a dead worker", "count", len(jobs))
	}
	return jobs, nil
}

// Sweep runs one full pass: Recover, then re-enqueue due messages whose task Redis lost,
// then housekeeping. It reports how many tasks it enqueued.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	total, err := s.Recover(ctx)
	if err != nil {
		return total, err
	}
	dueBy := models.Now().Add(-s.Grace)
	var after models.DueCursor
	for {
		due, err := s.Store.DueMessages(ctx, dueBy, after, sweepPage)
		if err != nil {
			return total, err
		}
		jobs := make([]Job, len(due))
		for i, m := range due {
			jobs[i] = Job{MessageID: m.ID, Priority: m.Priority, ProcessAt: m.NextAttemptAt}
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
		s.Log.Warn("sweeper: re-enqueued messages whose task was missing or whose worker died", "count", total)
	}
	s.housekeeping(ctx)
	return total, nil
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
