package tasks_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"herald/delivery"
	"herald/directory"
	"herald/internal/testenv"
	"herald/models"
	"herald/sending"
	"herald/simulator"
	"herald/tasks"
)

// scheduleRig is a store and a Redis with a Tianyuan account on a simulator, and
// workers started on them as a worker process starts them: an Asynq server with the
// send and sweep handlers, and a forwarder.
type scheduleRig struct {
	store     *models.Store
	red       *tasks.Redis
	redisURL  string
	enq       *tasks.Enqueuer
	sim       *simulator.Simulator
	account   *sending.Account
	recipient *directory.Recipient
	log       *slog.Logger
}

func newScheduleRig(t *testing.T) *scheduleRig {
	t.Helper()
	ctx := context.Background()
	r := &scheduleRig{store: testenv.Store(t), redisURL: testenv.RedisURL(t), sim: simulator.New(simulator.Faults{}),
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var err error
	if r.red, err = tasks.ParseRedisURL(r.redisURL); err != nil {
		t.Fatal(err)
	}
	r.enq = tasks.NewEnqueuer(r.red.Asynq())
	t.Cleanup(func() { r.enq.Close() })
	srv := httptest.NewServer(r.sim.Handler())
	t.Cleanup(srv.Close)
	r.account = &sending.Account{Name: "ty", Platform: "tianyuan", Enabled: true, Healthy: true, AllowPrivateNetwork: true, MaxAttempts: 3,
		Config: map[string]string{"base_url": srv.URL + "/tianyuan", "path": "/messages", "token": "tok"}}
	if err := r.store.Sending().CreateAccount(ctx, r.account); err != nil {
		t.Fatal(err)
	}
	r.recipient = &directory.Recipient{ExternalID: "E1001", Name: "Li Wei", OrgType: directory.Branch, TianyuanID: "ty_E1001", Active: true}
	if err := r.store.Directory().CreateRecipient(ctx, r.recipient); err != nil {
		t.Fatal(err)
	}
	return r
}

// startWorker starts one worker until the test ends.
func (r *scheduleRig) startWorker(t *testing.T) {
	t.Helper()
	send := newTestSender(t, r.store, r.red, tasks.SenderConfig{Enqueuer: r.enq, CallTimeout: 5 * time.Second})
	insp := asynq.NewInspector(r.red.Asynq())
	t.Cleanup(func() { insp.Close() })
	sweep := newTestSweeper(t, tasks.SweeperConfig{Store: r.store, Enqueuer: r.enq, Inspector: insp})
	srv := tasks.NewWorker(r.red.Asynq(), r.enq, tasks.WorkerOptions{Concurrency: 8, TaskCheckInterval: 10 * time.Millisecond, Log: r.log},
		send, sweep, &tasks.Callbacks{Store: r.store, Enqueuer: r.enq, Log: r.log})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	fwd, err := tasks.NewForwarder(r.enq, sweep, r.log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { fwd.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; srv.Shutdown() })
}

// schedule writes batches due at each of dues, with n messages each (a batch of one goes
// on a task of its own, a larger one in a chunk, as intake does), and enqueues them.
func (r *scheduleRig) schedule(t *testing.T, n int, dues ...time.Time) []models.Message {
	t.Helper()
	ctx := context.Background()
	var all []models.Message
	for _, due := range dues {
		b := &models.Batch{ID: models.NewID(), Source: "api", Platform: r.account.Platform, AccountID: r.account.ID, Priority: "normal", SendAt: &due}
		msgs := make([]models.Message, n)
		ids := make([]string, n)
		for i := range msgs {
			msgs[i] = models.Message{ID: models.NewID(), BatchID: b.ID, RecipientID: r.recipient.ID, AccountID: r.account.ID,
				Platform: r.account.Platform, Address: fmt.Sprintf("ty_%d", i), MsgType: "text", Content: "Ledger 42 closes at five",
				Priority: "normal", Status: models.StatusPending, MaxAttempts: 3, SendAt: due, NextAttemptAt: &due}
			ids[i] = msgs[i].ID
		}
		jobs := tasks.Chunk(ids, "normal", due, func(first string, k int) string {
			if n == 1 {
				return first
			}
			return tasks.ChunkTaskID(b.ID, k)
		})
		for i := range msgs {
			msgs[i].TaskID = jobs[0].TaskID
		}
		if err := r.store.CreateBatch(ctx, b, msgs, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := r.enq.Enqueue(ctx, jobs); err != nil {
			t.Fatal(err)
		}
		all = append(all, msgs...)
	}
	return all
}

// deliveries waits until the simulator has taken want deliveries (or 15 s pass) and
// returns them by message id.
func (r *scheduleRig) deliveries(t *testing.T, want int) map[string][]simulator.Delivery {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for len(r.sim.Deliveries()) < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // long enough for a second send to show
	got := map[string][]simulator.Delivery{}
	for _, d := range r.sim.Deliveries() {
		got[d.RequestID] = append(got[d.RequestID], d)
	}
	return got
}

// checkSentOnceOnTime reports each message not delivered exactly once, or delivered
// before its send_at, or not recorded sent.
func (r *scheduleRig) checkSentOnceOnTime(t *testing.T, msgs []models.Message, got map[string][]simulator.Delivery) {
	t.Helper()
	type result struct {
		Deliveries int
		Early      bool
		Status     models.Status
	}
	for _, m := range msgs {
		want := result{Deliveries: 1, Status: models.StatusSent}
		res := result{Deliveries: len(got[m.ID])}
		for _, d := range got[m.ID] {
			// The simulator stamps arrivals in whole milliseconds, rounded down.
			if d.ReceivedAtMs < m.SendAt.UnixMilli() {
				res.Early = true
				t.Logf("message %s due %s arrived %d ms early", m.ID, m.SendAt.Format(time.StampMilli), m.SendAt.UnixMilli()-d.ReceivedAtMs)
			}
		}
		row, err := r.store.MessageWithRecipient(context.Background(), m.ID)
		if err != nil {
			t.Fatal(err)
		}
		res.Status = row.Status
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("message %s (-want +got):\n%s", m.ID, diff)
		}
	}
}

// TestScheduledSendsGoOutOnTimeOnce: with two workers, each with its forwarder, every
// scheduled message, alone or in a chunk, goes out once and never before its send_at.
// When Redis loses the schedule (FLUSHDB) before they fall due, they still go out once
// and on time: the forwarders see the schedule's mark gone and the messages are put back
// from the database. A job lost alone (the mark kept) is found by the sweeper once due.
func TestScheduledSendsGoOutOnTimeOnce(t *testing.T) {
	ctx := context.Background()
	r := newScheduleRig(t)
	r.startWorker(t)
	r.startWorker(t)

	// Due times with fractions of a second, which Asynq's whole seconds would round.
	base := time.Now().Add(time.Second).Truncate(time.Second)
	var dues []time.Time
	for i := range 12 {
		dues = append(dues, base.Add(time.Duration(i*97+13)*time.Millisecond))
	}
	msgs := r.schedule(t, 1, dues...)
	msgs = append(msgs, r.schedule(t, 40, base.Add(777*time.Millisecond))...)
	r.checkSentOnceOnTime(t, msgs, r.deliveries(t, len(msgs)))

	rdb := redisClient(t, r.redisURL)
	r.sim.Reset()
	soon := time.Now().Add(700 * time.Millisecond)
	flushed := r.schedule(t, 1, soon, soon.Add(50*time.Millisecond))
	flushed = append(flushed, r.schedule(t, 5, soon.Add(100*time.Millisecond))...)
	if err := rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	r.checkSentOnceOnTime(t, flushed, r.deliveries(t, len(flushed)))

	r.sim.Reset()
	alone := r.schedule(t, 1, time.Now().Add(300*time.Millisecond))
	if err := rdb.ZRem(ctx, tasks.ScheduleKey(tasks.QueueNormal), alone[0].TaskID).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if n := len(r.sim.Deliveries()); n != 0 {
		t.Fatalf("%d messages went out though their job was taken off the schedule: the test proves nothing", n)
	}
	insp := asynq.NewInspector(r.red.Asynq())
	t.Cleanup(func() { insp.Close() })
	sweeper := newTestSweeper(t, tasks.SweeperConfig{Store: r.store, Enqueuer: r.enq, Inspector: insp})
	if n, err := sweeper.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("the sweep enqueued %d tasks (%v), want 1 for the lost job", n, err)
	}
	r.checkSentOnceOnTime(t, alone, r.deliveries(t, len(alone)))
}

// TestScheduledWithoutWakeUpsGoOutOnTime: jobs another process schedules while every
// wake-up it publishes is lost still go out once and never early: the idle forwarder
// polls the schedule often enough to see them before they fall due.
func TestScheduledWithoutWakeUpsGoOutOnTime(t *testing.T) {
	r := newScheduleRig(t)
	r.startWorker(t)
	time.Sleep(100 * time.Millisecond) // the forwarder's first pass done: it sleeps
	other := tasks.NewEnqueuer(r.red.Asynq())
	t.Cleanup(func() { other.Close() })
	other.DropWakes()
	r.enq = other // what the rig schedules from here on, another process schedules
	due := time.Now().Add(1500 * time.Millisecond)
	msgs := r.schedule(t, 1, due, due.Add(90*time.Millisecond))
	msgs = append(msgs, r.schedule(t, 5, due.Add(170*time.Millisecond))...)
	r.checkSentOnceOnTime(t, msgs, r.deliveries(t, len(msgs)))
}

// TestEnqueueSchedulesWhatIsDueLater: a job due now or before goes to its Asynq queue to
// run at once; a job due later waits in Herald's schedule, at its due time to the
// millisecond, and not in Asynq.
func TestEnqueueSchedulesWhatIsDueLater(t *testing.T) {
	ctx := context.Background()
	red, err := tasks.ParseRedisURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	enq := tasks.NewEnqueuer(red.Asynq())
	t.Cleanup(func() { enq.Close() })
	insp := asynq.NewInspector(red.Asynq())
	t.Cleanup(func() { insp.Close() })
	now := time.Now()
	type where struct {
		AsynqState  string
		ScheduledAt time.Time
	}
	later, nextDay := now.Add(1500*time.Millisecond), now.Add(24*time.Hour+7*time.Millisecond)
	for _, tt := range []struct {
		name     string
		priority models.Priority
		due      time.Time
		want     where
	}{
		{"past", models.PriorityNormal, now.Add(-time.Minute), where{AsynqState: "pending"}},
		{"now", models.PriorityLow, now, where{AsynqState: "pending"}},
		{"later", models.PriorityHigh, later, where{ScheduledAt: later.Truncate(time.Millisecond)}},
		{"next day", models.PriorityNormal, nextDay, where{ScheduledAt: nextDay.Truncate(time.Millisecond)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			priority := tt.priority
			id := models.NewID()
			if n, err := enq.Enqueue(ctx, []tasks.Job{tasks.Single(id, priority, tt.due, "")}); err != nil || n != 1 {
				t.Fatalf("Enqueue: %d %v", n, err)
			}
			var got where
			if info, err := insp.GetTaskInfo(tasks.QueueFor(priority), id); err == nil {
				got.AsynqState = info.State.String()
			}
			at, ok, err := enq.ScheduledAt(ctx, tasks.QueueFor(priority), id)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				got.ScheduledAt = at
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(time.Time.Equal)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAGroupTaskSendsEachMemberAtItsOwnTime: a task carrying lone scheduled messages of
// two accounts whose due times spread over a slot (as intake groups them, due when the
// earliest is) sends each once and none before its own send_at, whatever order the
// task lists them in.
func TestAGroupTaskSendsEachMemberAtItsOwnTime(t *testing.T) {
	ctx := context.Background()
	r := newScheduleRig(t)
	second := &sending.Account{Name: "ty2", Platform: "tianyuan", Enabled: true, Healthy: true, AllowPrivateNetwork: true, MaxAttempts: 3,
		Limits: delivery.Limits{PerSecond: 50}, Config: r.account.Config}
	if err := r.store.Sending().CreateAccount(ctx, second); err != nil {
		t.Fatal(err)
	}
	r.startWorker(t)
	base := time.Now().Add(800 * time.Millisecond)
	taskID := "g1:group"
	var msgs []models.Message
	var ids []string
	for i := range 12 {
		acct := r.account
		if i%3 == 0 {
			acct = second
		}
		due := base.Add(time.Duration(44-4*i) * time.Millisecond) // listed latest first
		b := &models.Batch{ID: models.NewID(), Source: "api", Platform: acct.Platform, AccountID: acct.ID, Priority: "normal", SendAt: &due}
		m := models.Message{ID: models.NewID(), BatchID: b.ID, RecipientID: r.recipient.ID, AccountID: acct.ID,
			Platform: acct.Platform, Address: fmt.Sprintf("ty_%d", i), MsgType: "text", Content: "Ledger 42 closes at five",
			Priority: "normal", Status: models.StatusPending, MaxAttempts: 3, SendAt: due, NextAttemptAt: &due, TaskID: taskID}
		if err := r.store.CreateBatch(ctx, b, []models.Message{m}, nil); err != nil {
			t.Fatal(err)
		}
		msgs, ids = append(msgs, m), append(ids, m.ID)
	}
	earliest := base.Add(time.Duration(44-4*11) * time.Millisecond)
	if _, err := r.enq.Enqueue(ctx, []tasks.Job{{TaskID: taskID, MessageIDs: ids, Priority: "normal", ProcessAt: earliest}}); err != nil {
		t.Fatal(err)
	}
	r.checkSentOnceOnTime(t, msgs, r.deliveries(t, len(msgs)))
}

// TestRescheduleLeavesKeptTasksAlone: a forwarder finding no schedule mark has the
// sweeper put back the waiting messages whose task Redis lost, and only those. With the
// intake's tasks all still in Redis (no worker has run on it yet), nothing is enqueued
// again; once a chunk's task is deleted from its queue and a scheduled job from the
// schedule, their messages, and no others, get new tasks, recorded on their rows.
func TestRescheduleLeavesKeptTasksAlone(t *testing.T) {
	ctx := context.Background()
	r := newScheduleRig(t)
	now, later := time.Now(), time.Now().Add(time.Hour)
	due := r.schedule(t, 3, now)
	scheduled := r.schedule(t, 2, later)
	lone := r.schedule(t, 1, now)
	insp := asynq.NewInspector(r.red.Asynq())
	t.Cleanup(func() { insp.Close() })
	sweeper := newTestSweeper(t, tasks.SweeperConfig{Store: r.store, Enqueuer: r.enq, Inspector: insp})

	if n, err := sweeper.Reschedule(ctx); err != nil || n != 0 {
		t.Fatalf("with every task in Redis, Reschedule enqueued %d tasks (%v), want 0", n, err)
	}
	if err := insp.DeleteTask(tasks.QueueNormal, due[0].TaskID); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := r.enq.ScheduledAt(ctx, tasks.QueueNormal, scheduled[0].TaskID); err != nil || !ok {
		t.Fatalf("the later batch's job is not in the schedule (%v): the test proves nothing", err)
	}
	rdb := redisClient(t, r.redisURL)
	if err := rdb.ZRem(ctx, tasks.ScheduleKey(tasks.QueueNormal), scheduled[0].TaskID).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := sweeper.Reschedule(ctx); err != nil || n != 2 {
		t.Fatalf("with two tasks lost, Reschedule enqueued %d tasks (%v), want 2", n, err)
	}
	for _, m := range append(append(due, scheduled...), lone...) {
		got, err := r.store.MessageByID(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		moved := got.TaskID != m.TaskID
		if want := m.BatchID != lone[0].BatchID; moved != want {
			t.Errorf("message of batch %s: task %s → %s; moved %v, want %v", m.BatchID, m.TaskID, got.TaskID, moved, want)
		}
	}
}
