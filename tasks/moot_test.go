package tasks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"herald/internal/testenv"
	"herald/models"
	"herald/tasks"
)

// TestMootMessageIsNotCalled: a message of an alert that the Moot hook says is no longer
// wanted (a call whose alert was taken while the worker held it) is stopped before its
// platform call, without an attempt; one the hook lets through, and one whose check
// fails, are sent.
func TestMootMessageIsNotCalled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := testenv.Store(t)
	red, err := tasks.ParseRedisURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	receiver := newHookReceiver(t, nil)
	a, r := hookAccount(t, store, receiver, nil)
	b := &models.Batch{ID: models.NewID(), Source: "api", Platform: a.Platform, AccountID: a.ID, Priority: "high"}
	now := time.Now().UTC().Truncate(time.Microsecond)
	alertID := int64(7)
	var msgs []models.Message
	for _, addr := range []string{"taken@example.com", "open@example.com", "unknown@example.com"} {
		id := models.NewID()
		msgs = append(msgs, models.Message{ID: id, BatchID: b.ID, RecipientID: r.ID, AccountID: a.ID, Platform: a.Platform,
			Address: addr, MsgType: "text", Content: "核心系统告警", Priority: models.PriorityHigh, Status: models.StatusPending,
			MaxAttempts: 3, SendAt: now, NextAttemptAt: &now, TaskID: id, AlertID: &alertID})
	}
	if err := store.CreateBatch(ctx, b, msgs, nil); err != nil {
		t.Fatal(err)
	}
	asked := map[string]int{}
	moot := func(_ context.Context, _ *models.Store, m *models.Message) (string, error) {
		asked[m.Address]++
		switch m.Address {
		case "taken@example.com":
			return "alert_acknowledged", nil
		case "unknown@example.com":
			return "", errors.New("database away")
		}
		return "", nil
	}
	sender := newTestSender(t, store, red, tasks.SenderConfig{CallTimeout: 5 * time.Second, Moot: moot})
	for _, m := range msgs {
		_ = sender.ProcessTask(ctx, tasks.NewSendMessageTask(tasks.Single(m.ID, m.Priority, now, "")))
	}
	for _, m := range msgs {
		stored, err := store.MessageByID(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if asked[m.Address] != 1 {
			t.Errorf("%s: the hook was asked %d times, want once", m.Address, asked[m.Address])
		}
		switch m.Address {
		case "taken@example.com":
			if stored.Status != models.StatusStopped || stored.Attempts != 0 || stored.LastError != "not placed: alert_acknowledged" || receiver.calls(m.Address) != 0 {
				t.Errorf("a moot message: %s, %d attempts, %q, called %d times; want stopped, no attempt, not called",
					stored.Status, stored.Attempts, stored.LastError, receiver.calls(m.Address))
			}
		default:
			if stored.Status != models.StatusSent || receiver.calls(m.Address) != 1 {
				t.Errorf("%s: %s, called %d times; want sent once", m.Address, stored.Status, receiver.calls(m.Address))
			}
		}
	}
}
