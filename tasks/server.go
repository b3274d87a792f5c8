package tasks

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
)

// delayedTaskCheck is how often each worker moves Asynq's due scheduled and retry tasks
// to their queues: one short script per queue, and what bounds how late a retry goes.
const delayedTaskCheck = 250 * time.Millisecond

// How often the sweeper runs: the full sweep (Redis lost a task, housekeeping) once a
// minute, the recovery of dead workers' claims every few seconds. Recovery is cheap: one
// indexed read of the few sending rows whose lease ran out.
const (
	SweepEvery   = time.Minute
	RecoverEvery = 3 * time.Second
)

// NewScheduler returns the scheduler that enqueues the sweeper (every sweepEvery;
// SweepEvery when zero) and the recovery task. Several scheduler processes may run: each
// task is unique per interval, so one runs.
func NewScheduler(redis asynq.RedisConnOpt, log *slog.Logger, sweepEvery time.Duration) (*asynq.Scheduler, error) {
	if sweepEvery <= 0 {
		sweepEvery = SweepEvery
	}
	s := asynq.NewScheduler(redis, &asynq.SchedulerOpts{
		Logger:   asynqLogger{log.With("component", "asynq-scheduler")},
		LogLevel: asynq.WarnLevel,
		Location: time.UTC,
	})
	if _, err := s.Register(fmt.Sprintf("@every %s", sweepEvery), NewSweepTask(), asynq.Unique(sweepEvery*11/12)); err != nil {
		return nil, fmt.Errorf("tasks: register sweeper: %w", err)
	}
	if _, err := s.Register(fmt.Sprintf("@every %s", RecoverEvery), NewRecoverTask(), asynq.Unique(RecoverEvery-time.Second)); err != nil {
		return nil, fmt.Errorf("tasks: register recovery: %w", err)
	}
	return s, nil
}

// SweepNow enqueues one sweep right away (unique, so a concurrent one is not doubled).
// Schedulers call it at start: after a restart on an emptied Redis, due messages should
// not wait a minute.
func SweepNow(ctx context.Context, client *asynq.Client) error {
	_, err := client.EnqueueContext(ctx, NewSweepTask(), asynq.Unique(10*time.Second))
	if err != nil && err != asynq.ErrDuplicateTask {
		return fmt.Errorf("tasks: enqueue sweep: %w", err)
	}
	return nil
}

// asynqLogger adapts slog to Asynq's logger interface.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }
