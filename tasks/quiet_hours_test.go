package tasks_test

import (
	"context"
	"testing"
	"time"

	"herald/models"
	"herald/sending"
	"herald/tasks"
)

// TestQuietHoursHoldNormalAndLow: inside an account's quiet hours (by a clock the test
// sets), normal and low messages wait, pending until the window ends, with no attempt
// used and nothing sent; high goes at once; at the end of the window the waiting ones go.
func TestQuietHoursHoldNormalAndLow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, red := storeAndRedis(t)
	receiver := newHookReceiver(t, nil)
	a, r := hookAccount(t, store, receiver, func(a *sending.Account) { a.QuietHours = sending.QuietHours{Start: "20:00", End: "08:00"} })
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	// 23:00 in Shanghai on a day in the past, so the release time is due by the real clock.
	night := time.Date(2026, 1, 10, 23, 0, 0, 0, shanghai)
	morning := time.Date(2026, 1, 11, 8, 0, 0, 0, shanghai)
	b := &models.Batch{ID: models.NewID(), Source: "api", Platform: a.Platform, AccountID: a.ID, Priority: "normal"}
	due := night.UTC()
	var msgs []models.Message
	for _, p := range []models.Priority{models.PriorityNormal, models.PriorityLow, models.PriorityHigh} {
		id := models.NewID()
		msgs = append(msgs, models.Message{ID: id, BatchID: b.ID, RecipientID: r.ID, AccountID: a.ID, Platform: a.Platform,
			Address: string(p) + "@example.com", MsgType: "text", Content: "Vault audit", Priority: p, Status: models.StatusPending,
			MaxAttempts: 3, SendAt: due, NextAttemptAt: &due, TaskID: id})
	}
	if err := store.CreateBatch(ctx, b, msgs, nil); err != nil {
		t.Fatal(err)
	}
	enq := tasks.NewEnqueuer(red.Asynq())
	t.Cleanup(func() { enq.Close() })
	clock := night
	sender := newTestSender(t, store, red, tasks.SenderConfig{Enqueuer: enq, CallTimeout: 5 * time.Second, Location: shanghai,
		Now: func() time.Time { return clock }})
	// A message that must wait asks its task to run again later (an error for Asynq's
	// retry); the stored rows below say what happened.
	run := func() {
		for _, m := range msgs {
			_ = sender.ProcessTask(ctx, tasks.NewSendMessageTask(tasks.Single(m.ID, m.Priority, due, "")))
		}
	}
	run()
	for _, m := range msgs {
		stored, err := store.MessageByID(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if m.Priority == models.PriorityHigh {
			if stored.Status != models.StatusSent || receiver.calls("high@example.com") != 1 {
				t.Errorf("high at night: %s, called %d times; want sent once", stored.Status, receiver.calls("high@example.com"))
			}
			continue
		}
		if stored.Status != models.StatusPending || stored.ErrorClass != sending.ErrorClassQuietHours || stored.Attempts != 0 ||
			stored.NextAttemptAt == nil || !stored.NextAttemptAt.Equal(morning) || receiver.calls(m.Address) != 0 {
			t.Errorf("%s at night: %s %q, %d attempts, due %v, called %d times; want pending for quiet_hours until %s, no attempt, not called",
				m.Priority, stored.Status, stored.ErrorClass, stored.Attempts, stored.NextAttemptAt, receiver.calls(m.Address), morning)
		}
	}
	n, err := store.QuietWaiting(ctx, b.ID)
	if err != nil || n != 2 {
		t.Errorf("QuietWaiting %d, %v; want 2", n, err)
	}

	clock = morning
	run()
	for _, m := range msgs {
		stored, _ := store.MessageByID(ctx, m.ID)
		if stored.Status != models.StatusSent || receiver.calls(m.Address) != 1 {
			t.Errorf("%s after the window: %s, called %d times; want sent once", m.Priority, stored.Status, receiver.calls(m.Address))
		}
	}
}
