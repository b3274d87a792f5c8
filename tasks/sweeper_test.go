package tasks_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"herald/internal/testenv"
	"herald/tasks"
)

// TestRecoverReplacesOrphanedSendTasks: a send task that a worker took from the queue
// and then lost (the worker died before it claimed the message, so no lease of Herald's
// expires) is sent out again under a task id of its own as soon as Asynq reports it
// orphaned, and only once however often recovery runs.
func TestRecoverReplacesOrphanedSendTasks(t *testing.T) {
	url := testenv.RedisURL(t)
	red, err := tasks.ParseRedisURL(url)
	if err != nil {
		t.Fatal(err)
	}
	redisOpt := red.Asynq()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	// A worker whose handler never returns holds the task as active.
	srv := asynq.NewServer(redisOpt, asynq.Config{Concurrency: 1, Queues: tasks.Queues, ShutdownTimeout: time.Second,
		Logger: discardLogger{}})
	held := make(chan struct{}, 1)
	release := make(chan struct{})
	mux := asynq.NewServeMux()
	mux.HandleFunc(tasks.TypeSendMessage, func(ctx context.Context, _ *asynq.Task) error {
		held <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(release); srv.Shutdown() })
	enq := tasks.NewEnqueuer(redisOpt)
	t.Cleanup(func() { enq.Close() })
	const messageID = "0190a000-0000-7000-8000-000000000001"
	if _, err := enq.Enqueue(context.Background(), []tasks.Job{{MessageID: messageID, Priority: "normal", ProcessAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker never took the task")
	}

	insp := asynq.NewInspector(redisOpt)
	t.Cleanup(func() { insp.Close() })
	sweeper := &tasks.Sweeper{Store: testenv.Store(t), Enqueuer: enq, Inspector: insp, Log: log}
	replacement := tasks.SendTaskID(messageID, "orphan-"+messageID)
	if n, err := sweeper.Recover(context.Background()); err != nil || n != 0 {
		t.Fatalf("Recover with a live worker enqueued %d (%v), want 0", n, err)
	}
	if _, err := insp.GetTaskInfo(tasks.QueueNormal, replacement); err == nil {
		t.Fatal("a task held by a live worker was replaced")
	}

	// The worker dies: its lease on the task runs out (what Asynq records when its
	// heartbeat stops), without waiting the 30 s for it.
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	leaseKey := "asynq:{" + tasks.QueueNormal + "}:lease"
	if err := rdb.ZAdd(context.Background(), leaseKey, redis.Z{Score: float64(time.Now().Add(-time.Minute).Unix()), Member: messageID}).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		n, err := sweeper.Recover(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{1, 0}[i]; n != want {
			t.Errorf("Recover pass %d enqueued %d replacements, want %d", i+1, n, want)
		}
	}
	info, err := insp.GetTaskInfo(tasks.QueueNormal, replacement)
	if err != nil {
		t.Fatalf("no replacement task %s: %v", replacement, err)
	}
	if info.Type != tasks.TypeSendMessage {
		t.Errorf("replacement is a %s task", info.Type)
	}
}

type discardLogger struct{}

func (discardLogger) Debug(...any) {}
func (discardLogger) Info(...any)  {}
func (discardLogger) Warn(...any)  {}
func (discardLogger) Error(...any) {}
func (discardLogger) Fatal(...any) {}
