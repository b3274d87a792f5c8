package phone_test

import (
	"context"
	"testing"
	"time"

	"herald/alert"
	"herald/internal/testenv"
	"herald/models"
	"herald/phone"
)

// TestMootCallOfAnEndedAlert: a worker about to place an alert's call asks whether it is
// still wanted. While the alert is open it is; once the alert is acknowledged (the call
// held by the worker, so CancelCalls passed it by) it is not: the call is marked not
// placed for that reason, and stays so when asked again. A message that is not a call is
// never moot.
func TestMootCallOfAnEndedAlert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := testenv.Store(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	testenv.SeedRows(t, store, "batches", []testenv.Row{testenv.BatchRow("b1", nil, now)})
	testenv.SeedRows(t, store, "alerts", []testenv.Row{{"id": int64(1), "batch_id": "b1", "policy": "core", "policy_copy": "{}",
		"state": alert.AlertOpen, "step": 1, "round": 1, "account_id": 1, "opened_at": now, "source": "zabbix", "text": "t"}})
	alertID := int64(1)
	call := testenv.SentMessage("call-1", "b1", 1, &alertID, now)
	call["platform"], call["status"], call["sent_at"] = alert.VoicePlatform, "sending", nil
	text := testenv.SentMessage("text-1", "b1", 1, &alertID, now)
	text["status"], text["sent_at"] = "sending", nil
	testenv.SeedRows(t, store, "messages", []testenv.Row{call, text})
	if err := phone.Of(store).AddCalls(ctx, []phone.Call{{MessageID: "call-1", AlertID: 1, AccountID: 1, Step: 1, Round: 1,
		Person: "E1001", CreatedAt: now}}); err != nil {
		t.Fatal(err)
	}
	message := func(id string) *models.Message {
		m, err := store.MessageByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	moot := func(id string) string {
		t.Helper()
		reason, err := phone.Book{}.Moot(ctx, store, message(id))
		if err != nil {
			t.Fatal(err)
		}
		return reason
	}
	if r := moot("call-1"); r != "" {
		t.Errorf("the call of an open alert: moot for %q", r)
	}
	if _, err := store.SQL().Exec("UPDATE alerts SET state = ? WHERE id = 1", alert.AlertAcknowledged); err != nil {
		t.Fatal(err)
	}
	if r := moot("text-1"); r != "" {
		t.Errorf("a text notice: moot for %q", r)
	}
	if r := moot("call-1"); r != alert.CallCancelledAcknowledged {
		t.Errorf("the call of an acknowledged alert: %q, want %q", r, alert.CallCancelledAcknowledged)
	}
	c, err := phone.Of(store).CallByMessage(ctx, "call-1")
	if err != nil {
		t.Fatal(err)
	}
	if c.Outcome != phone.CallNotPlaced || c.Reason != alert.CallCancelledAcknowledged {
		t.Errorf("the call reads %q (%q), want not placed for the acknowledgment", c.Outcome, c.Reason)
	}
	if r := moot("call-1"); r != alert.CallCancelledAcknowledged {
		t.Errorf("asked again: %q, want the same reason", r)
	}
}
