package tasks_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

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
	store, red := storeAndRedis(t)
	c := newHookChunk(t, store, []string{"taken@example.com", "open@example.com", "unknown@example.com"})
	if _, err := store.SQL().Exec("UPDATE messages SET alert_id = 7, priority = 'high'"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	asked := map[string]int{}
	moot := func(_ context.Context, _ *models.Store, m *models.Message) (string, error) {
		mu.Lock()
		asked[m.Address]++
		mu.Unlock()
		switch m.Address {
		case "taken@example.com":
			return "alert_acknowledged", nil
		case "unknown@example.com":
			return "", errors.New("database away")
		}
		return "", nil
	}
	sender := newTestSender(t, store, red, tasks.SenderConfig{CallTimeout: 5 * time.Second, Moot: moot})
	if err := sender.ProcessTask(ctx, c.task); err != nil {
		t.Fatal(err)
	}
	for _, id := range c.ids {
		m, err := store.MessageByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if asked[m.Address] != 1 {
			t.Errorf("%s: the hook was asked %d times, want once", m.Address, asked[m.Address])
		}
		calls := c.receiver.calls(m.Address)
		if m.Address == "taken@example.com" {
			if m.Status != models.StatusStopped || m.Attempts != 0 || m.LastError != "not placed: alert_acknowledged" || calls != 0 {
				t.Errorf("a moot message: %s, %d attempts, %q, called %d times; want stopped, no attempt, not called",
					m.Status, m.Attempts, m.LastError, calls)
			}
		} else if m.Status != models.StatusSent || calls != 1 {
			t.Errorf("%s: %s, called %d times; want sent once", m.Address, m.Status, calls)
		}
	}
}
