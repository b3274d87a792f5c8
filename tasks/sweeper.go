package tasks

import (
	"context"
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
	// Grace is how long past due a message must be before the sweeper looks at it, so it
	// does not race a task that is about to run anyway.
	Grace time.Duration
}

// sweepPage is how many due messages one query returns.
const sweepPage = 2000

// ProcessTask implements asynq.Handler for TypeSweep.
func (s *Sweeper) ProcessTask(ctx context.Context, _ *asynq.Task) error {
	_, err := s.Sweep(ctx)
	return err
}

// Sweep runs one pass and reports how many tasks it enqueued.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	released, err := s.Store.ReleaseExpiredLeases(ctx)
	if err != nil {
		return 0, err
	}
	if released > 0 {
		s.Log.Warn("sweeper: released expired claims", "count", released)
	}
	dueBy := models.Now().Add(-s.Grace)
	total := 0
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
		s.Log.Warn("sweeper: re-enqueued messages whose task was missing", "count", total)
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
