package main

import (
	"context"
	"testing"
	"time"

	"herald/dispatch"
	"herald/models"
	"herald/simulator"
)

// TestHighPriorityOvertakesFanOut sends one high-priority message while a low-priority
// fan-out to the same account drains, and checks that it goes out ahead of most of the
// fan-out rather than behind it.
func TestHighPriorityOvertakesFanOut(t *testing.T) {
	const fanOut = 3000
	env := testEnv(t)
	// Five worker goroutines bound what the worker already holds when the high message
	// arrives: five tasks of at most a chunk (tasks.ChunkSize messages) each, so 10 % sent
	// plus five chunks is still well short of half the fan-out. 20 ms per platform call
	// keeps the fan-out going for seconds, long enough to post in the middle of it.
	env["HERALD_WORKER_CONCURRENCY"] = "5"
	rig := newFaultRig(t, env, fanOut, simulator.Faults{Latency: simulator.Duration(20 * time.Millisecond)})

	// Submitted through dispatch, not the API: the API's request deadline is not what this
	// test is about, and a 3,000-recipient intake can outlast it on a loaded machine.
	lowBatch := submitAt(t, rig, rig.People, "low")
	deadline := time.Now().Add(2 * time.Minute)
	var sentAtPost int
	for {
		sentAtPost = rig.StatusCounts(t)[models.StatusSent]
		if sentAtPost >= fanOut/10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d fan-out messages sent after 2 minutes", sentAtPost, fanOut)
		}
		time.Sleep(25 * time.Millisecond)
	}
	if sentAtPost >= fanOut/2 {
		t.Fatalf("%d of %d fan-out messages were sent before the high one was posted: the fan-out drains too fast for this test to show anything", sentAtPost, fanOut)
	}
	highBatch := submitAt(t, rig, rig.People[:1], "high")
	high := onlyMessage(t, rig, highBatch)
	deadline = time.Now().Add(2 * time.Minute)
	for high.SentAt == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the high-priority message is %s after 2 minutes", high.Status)
		}
		time.Sleep(25 * time.Millisecond)
		high = onlyMessage(t, rig, highBatch)
	}

	low, err := rig.H.App.Store.MessagesOfBatch(context.Background(), lowBatch, fanOut+1)
	if err != nil {
		t.Fatal(err)
	}
	if len(low) != fanOut {
		t.Fatalf("the fan-out has %d messages, want %d", len(low), fanOut)
	}
	sentBefore := 0
	for _, m := range low {
		if m.SentAt != nil && m.SentAt.Before(*high.SentAt) {
			sentBefore++
		}
	}
	t.Logf("%d fan-out messages were sent when the high one was posted, %d before it was sent", sentAtPost, sentBefore)
	if sentBefore > fanOut/2 {
		t.Errorf("%d of %d low-priority messages were sent before the high-priority one: it did not overtake the fan-out", sentBefore, fanOut)
	}

	// The test stops once the high message has overtaken: draining the rest of the
	// fan-out proves only that a backlog ends sent, which the fault runs
	// (TestFaultRunEndsEveryMessageSentOrStopped) prove under worse conditions.
	if counts := rig.StatusCounts(t); counts[models.StatusStopped] != 0 {
		t.Errorf("messages by status when the high one was sent: %v, want none stopped", counts)
	}
}

// submitAt sends a text message to recipients at priority and returns its batch id.
func submitAt(t *testing.T, rig *faultRig, recipients []string, priority models.Priority) string {
	t.Helper()
	res, err := rig.Dispatch.Submit(context.Background(), dispatch.Request{Source: "api", Actor: "test",
		Account: rig.Account.Name, Recipients: recipients, Priority: priority, Text: "priority " + string(priority)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != len(recipients) {
		t.Fatalf("send %d %s messages: %d accepted", len(recipients), priority, len(res.Messages))
	}
	return res.Batch.ID
}

// onlyMessage returns the one message of a batch as stored now.
func onlyMessage(t *testing.T, rig *faultRig, batchID string) *models.Message {
	t.Helper()
	msgs, err := rig.H.App.Store.MessagesOfBatch(context.Background(), batchID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 {
		t.Fatalf("batch %s has %d messages, want 1", batchID, len(msgs))
	}
	return &msgs[0].Message
}
