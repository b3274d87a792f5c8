package tasks_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"herald/models"
	"herald/sending"
	"herald/tasks"
)

// TestChunkRetriesAFailedMessageOnItsOwn: a chunk task delivers each of its messages
// once; the one the platform refuses for now moves to a task of its own, due when its
// retry is, and the chunk itself finishes: it is never run again for one message.
func TestChunkRetriesAFailedMessageOnItsOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, red := storeAndRedis(t)
	addrs := []string{"a@example.com", "b@example.com", "down@example.com", "c@example.com", "d@example.com"}
	c := newHookChunk(t, store, addrs)
	receiver, ids, task := c.receiver, c.ids, c.task
	enq := tasks.NewEnqueuer(red.Asynq())
	t.Cleanup(func() { enq.Close() })
	sender := newTestSender(t, store, red, tasks.SenderConfig{Enqueuer: enq, CallTimeout: 5 * time.Second})
	if err := sender.ProcessTask(ctx, task); err != nil {
		t.Fatalf("the chunk asked to run again: %v", err)
	}
	for _, to := range addrs {
		if receiver.calls(to) != 1 {
			t.Errorf("%s was called %d times, want once", to, receiver.calls(to))
		}
	}
	for i, id := range ids {
		m, err := store.MessageWithRecipient(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := models.StatusSent
		wantTask := c.taskID
		if addrs[i] == "down@example.com" {
			want, wantTask = models.StatusFailed, id
		}
		if m.Status != want || m.TaskID != wantTask {
			t.Errorf("%s: %s carried by %q, want %s carried by %q", addrs[i], m.Status, m.TaskID, want, wantTask)
		}
		if want == models.StatusFailed {
			at, ok, err := enq.ScheduledAt(ctx, tasks.QueueNormal, id)
			if err != nil || !ok {
				t.Fatalf("no task of its own scheduled for the failed message: %v", err)
			}
			if m.NextAttemptAt == nil || at.Sub(*m.NextAttemptAt).Abs() > time.Millisecond {
				t.Errorf("its own task is scheduled at %s, want its retry's time %s", at, m.NextAttemptAt)
			}
		}
	}
	// Run again (a duplicate delivery of the chunk): nothing is sent twice.
	if err := sender.ProcessTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	for _, to := range addrs {
		if receiver.calls(to) != 1 {
			t.Errorf("after the chunk ran twice %s was called %d times, want once", to, receiver.calls(to))
		}
	}
}

// TestRecoverReplacesWhatAStuckChunkStillCarries: a chunk task a dead worker took but
// never claimed is replaced with a task carrying only the messages still waiting for it:
// not one claimed elsewhere, not one finished, not one that moved to a task of its own.
func TestRecoverReplacesWhatAStuckChunkStillCarries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, red := storeAndRedis(t)
	msgs := seedDue(t, store, 5)
	chunk := tasks.ChunkTaskID(msgs[0].BatchID, 1)
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	if err := store.SetTaskID(ctx, chunk, ids); err != nil {
		t.Fatal(err)
	}
	waiting := []string{ids[0], ids[4]}
	if _, _, err := store.ClaimMany(ctx, []string{ids[1]}, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := store.CancelMessage(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	if err := store.SetTaskID(ctx, ids[3], []string{ids[3]}); err != nil {
		t.Fatal(err)
	}
	enq, held := holdingWorker(t, red.Asynq(), 1)
	if _, err := enq.Enqueue(ctx, tasks.Chunk(ids, "normal", time.Now(), func(string, int) string { return chunk })); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, held, 1)
	insp := recoverTwice(t, store, enq, red.Asynq())
	replacement := tasks.SendTaskID(ids[0], tasks.Replacing("orphan", chunk))
	info, err := insp.GetTaskInfo(tasks.QueueNormal, replacement)
	if err != nil {
		t.Fatalf("no replacement %s: %v", replacement, err)
	}
	var p tasks.SendMessagePayload
	if err := json.Unmarshal(info.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.IDs(), waiting) {
		t.Errorf("the replacement carries %v, want only the waiting %v", p.IDs(), waiting)
	}
	for _, id := range waiting {
		if m, _ := store.MessageWithRecipient(ctx, id); m == nil || m.TaskID != replacement {
			t.Errorf("message %s does not record its replacement task", id)
		}
	}
}

// TestSweepReenqueuesMessagesWhoseChunkIsLost: due messages whose chunk task Redis no
// longer has are enqueued again, together; messages whose chunk is still queued are left
// to it; a second sweep finds nothing to do.
func TestSweepReenqueuesMessagesWhoseChunkIsLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, red := storeAndRedis(t)
	msgs := seedDue(t, store, 6)
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	queued, lost := tasks.ChunkTaskID(msgs[0].BatchID, 1), tasks.ChunkTaskID(msgs[0].BatchID, 2)
	if err := store.SetTaskID(ctx, queued, ids[:3]); err != nil {
		t.Fatal(err)
	}
	if err := store.SetTaskID(ctx, lost, ids[3:]); err != nil {
		t.Fatal(err)
	}
	enq := tasks.NewEnqueuer(red.Asynq())
	t.Cleanup(func() { enq.Close() })
	if _, err := enq.Enqueue(ctx, tasks.Chunk(ids[:3], "normal", time.Now(), func(string, int) string { return queued })); err != nil {
		t.Fatal(err)
	}
	insp := asynq.NewInspector(red.Asynq())
	t.Cleanup(func() { insp.Close() })
	sweeper := newTestSweeper(t, tasks.SweeperConfig{Store: store, Enqueuer: enq, Inspector: insp})
	if n, err := sweeper.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("the sweep enqueued %d tasks (%v), want 1 for the lost chunk", n, err)
	}
	m, err := store.MessageWithRecipient(ctx, ids[3])
	if err != nil {
		t.Fatal(err)
	}
	info, err := insp.GetTaskInfo(tasks.QueueNormal, m.TaskID)
	if err != nil {
		t.Fatalf("the lost chunk's messages record task %q, which Redis does not have: %v", m.TaskID, err)
	}
	var p tasks.SendMessagePayload
	if err := json.Unmarshal(info.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.IDs(), ids[3:]) {
		t.Errorf("the new task carries %v, want %v", p.IDs(), ids[3:])
	}
	if n, err := sweeper.Sweep(ctx); err != nil || n != 0 {
		t.Errorf("a second sweep enqueued %d tasks (%v), want 0", n, err)
	}
}

// hookChunk is a batch of due messages in its first chunk, to a webhook receiver.
type hookChunk struct {
	account  *sending.Account
	receiver *hookReceiver
	ids      []string
	taskID   string
	task     *asynq.Task
}

// newHookChunk writes a batch of due messages to a webhook receiver that refuses
// down@example.com for now (503), one to each address, all in the batch's first chunk.
func newHookChunk(t *testing.T, store *models.Store, addrs []string) hookChunk {
	t.Helper()
	receiver := newHookReceiver(t, func(to string) bool { return to == "down@example.com" })
	a, r := hookAccount(t, store, receiver, nil)
	b := &models.Batch{ID: models.NewID(), Source: "api", Platform: a.Platform, AccountID: a.ID, Priority: "normal"}
	now := time.Now()
	taskID := tasks.ChunkTaskID(b.ID, 1)
	msgs := make([]models.Message, len(addrs))
	ids := make([]string, len(addrs))
	for i, to := range addrs {
		msgs[i] = models.Message{ID: models.NewID(), BatchID: b.ID, RecipientID: r.ID, AccountID: a.ID, Platform: a.Platform,
			Address: to, MsgType: "text", Content: "Ledger 42 closes at five", Priority: "normal", Status: models.StatusPending,
			MaxAttempts: 3, SendAt: now, NextAttemptAt: &now, TaskID: taskID}
		ids[i] = msgs[i].ID
	}
	if err := store.CreateBatch(context.Background(), b, msgs, nil); err != nil {
		t.Fatal(err)
	}
	task := tasks.NewSendMessageTask(tasks.Chunk(ids, "normal", now, func(string, int) string { return taskID })[0])
	return hookChunk{account: a, receiver: receiver, ids: ids, taskID: taskID, task: task}
}
