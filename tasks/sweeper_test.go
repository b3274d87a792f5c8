package tasks_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"herald/directory"
	"herald/internal/testenv"
	"herald/models"
	"herald/sending"
	"herald/tasks"
)

// TestRecoverReplacesOrphanedSendTasks: a send task that a worker took from the queue
// and then lost (the worker died before it claimed the message, so no lease of Herald's
// expires) is sent out again under a task id of its own as soon as Asynq reports it
// orphaned, and only once however often recovery runs.
func TestRecoverReplacesOrphanedSendTasks(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	red, err := tasks.ParseRedisURL(url)
	if err != nil {
		t.Fatal(err)
	}
	redisOpt := red.Asynq()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	store := testenv.Store(t)
	messageID := seedDue(t, store, 1)[0].ID
	enq, held := holdingWorker(t, redisOpt, 1)
	if _, err := enq.Enqueue(context.Background(), []tasks.Job{tasks.Single(messageID, "normal", time.Now(), "")}); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, held, 1)

	insp := asynq.NewInspector(redisOpt)
	t.Cleanup(func() { insp.Close() })
	sweeper := newTestSweeper(t, tasks.SweeperConfig{Store: store, Enqueuer: enq, Inspector: insp, Log: log})
	replacement := tasks.SendTaskID(messageID, tasks.Replacing("orphan", messageID))
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

// holdingWorker starts an Asynq worker whose send handler takes tasks and never returns
// until the test ends: the tasks stay active in Redis, as those of a worker that hangs
// or died while Asynq's lease on them still runs. Each task taken is reported on held.
func holdingWorker(t *testing.T, redisOpt asynq.RedisConnOpt, concurrency int) (*tasks.Enqueuer, <-chan struct{}) {
	t.Helper()
	srv := asynq.NewServer(redisOpt, asynq.Config{Concurrency: concurrency, Queues: tasks.Queues, ShutdownTimeout: time.Second,
		Logger: discardLogger{}})
	held := make(chan struct{}, concurrency)
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
	return enq, held
}

// waitHeld waits until the holding worker has taken n tasks.
func waitHeld(t *testing.T, held <-chan struct{}, n int) {
	t.Helper()
	for range n {
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatal("the worker never took the task")
		}
	}
}

// TestRecoverReplacesUnclaimedSendTasks: a send task held as active whose message stays
// due and unclaimed (its worker took it and died before the claim, and Asynq's 30 s
// lease on it has not run out) is replaced once two recovery passes a couple of seconds
// apart have seen it, and only once. A task whose message is claimed is left alone: the
// claim's lease decides about it.
func TestRecoverReplacesUnclaimedSendTasks(t *testing.T) {
	t.Parallel()
	red, err := tasks.ParseRedisURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	redisOpt := red.Asynq()
	store := testenv.Store(t)
	ctx := context.Background()
	now := time.Now()
	msgs := seedDue(t, store, 2)
	unclaimed, claimed := msgs[0].ID, msgs[1].ID
	if _, _, err := store.ClaimMany(ctx, []string{claimed}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}

	enq, held := holdingWorker(t, redisOpt, 2)
	jobs := []tasks.Job{tasks.Single(unclaimed, "normal", now, ""), tasks.Single(claimed, "normal", now, "")}
	if _, err := enq.Enqueue(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, held, 2)
	insp := recoverTwice(t, store, enq, redisOpt)
	if _, err := insp.GetTaskInfo(tasks.QueueNormal, tasks.SendTaskID(unclaimed, tasks.Replacing("orphan", unclaimed))); err != nil {
		t.Errorf("no replacement for the unclaimed message's task: %v", err)
	}
	if _, err := insp.GetTaskInfo(tasks.QueueNormal, tasks.SendTaskID(claimed, tasks.Replacing("orphan", claimed))); err == nil {
		t.Error("the claimed message's task was replaced before its lease ran out")
	}
}

// recoverTwice runs recovery once, then twice more after stuckAfter has passed, the way
// the scheduler spaces its passes: the first pass only notes active tasks whose messages
// wait, the second replaces each of them with one task, the third finds nothing more. It
// returns the inspector it looked with.
func recoverTwice(t *testing.T, store *models.Store, enq *tasks.Enqueuer, redisOpt asynq.RedisConnOpt) *asynq.Inspector {
	t.Helper()
	ctx := context.Background()
	insp := asynq.NewInspector(redisOpt)
	t.Cleanup(func() { insp.Close() })
	sweeper := newTestSweeper(t, tasks.SweeperConfig{Store: store, Enqueuer: enq, Inspector: insp})
	if n, err := sweeper.Recover(ctx); err != nil || n != 0 {
		t.Fatalf("the first pass to see the tasks enqueued %d (%v), want 0: the worker may be about to claim", n, err)
	}
	time.Sleep(2100 * time.Millisecond)
	for i := range 2 {
		n, err := sweeper.Recover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{1, 0}[i]; n != want {
			t.Errorf("Recover pass %d after the wait enqueued %d replacements, want %d", i+2, n, want)
		}
	}
	return insp
}

// seedDue stores n pending messages of one batch, due now, to a branch recipient on a
// Tianyuan account.
func seedDue(t *testing.T, store *models.Store, n int) []models.Message {
	t.Helper()
	ctx := context.Background()
	r := &directory.Recipient{ExternalID: "E1001", Name: "Li Wei", OrgType: directory.Branch, TianyuanID: "ty_E1001", Active: true}
	if err := store.Directory().CreateRecipient(ctx, r); err != nil {
		t.Fatal(err)
	}
	a := &sending.Account{Name: "ty-main", Platform: "tianyuan", Enabled: true, Healthy: true,
		Config: map[string]string{"base_url": "http://127.0.0.1:9900/tianyuan", "token": "tok"}}
	if err := store.Sending().CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	b := &models.Batch{ID: models.NewID(), Source: "api", Platform: a.Platform, AccountID: a.ID, Priority: "normal"}
	now := time.Now()
	msgs := make([]models.Message, n)
	for i := range msgs {
		msgs[i] = models.Message{ID: models.NewID(), BatchID: b.ID, RecipientID: r.ID, AccountID: a.ID,
			Platform: a.Platform, Address: r.Address(a.Platform), MsgType: "text", Content: "Overdue: ledger 42",
			Priority: "normal", Status: models.StatusPending, MaxAttempts: sending.DefaultMaxAttempts, SendAt: now, NextAttemptAt: &now}
	}
	if err := store.CreateBatch(ctx, b, msgs, nil); err != nil {
		t.Fatal(err)
	}
	return msgs
}

type discardLogger struct{}

func (discardLogger) Debug(...any) {}
func (discardLogger) Info(...any)  {}
func (discardLogger) Warn(...any)  {}
func (discardLogger) Error(...any) {}
func (discardLogger) Fatal(...any) {}
