package tasks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"herald/channels"
	"herald/internal/testenv"
	"herald/models"
	"herald/simulator"
	"herald/tasks"
)

// TestChunkSendsInGroups: a chunk's DingTalk messages that share their content go in
// one call per content; each is finished with its own outcome: the person who already
// had that content today is held back by DingTalk, and that message alone waits for a
// retry on a task of its own.
func TestChunkSendsInGroups(t *testing.T) {
	ctx := context.Background()
	store := testenv.Store(t)
	red, err := tasks.ParseRedisURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	sim := simulator.New(simulator.Faults{})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/dingtalk/topapi/message/corpconversation/asyncsend_v2" {
			calls.Add(1)
		}
		sim.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := map[string]string{"app_key": "k", "app_secret": "s", "agent_id": "1", "base_url": srv.URL + "/dingtalk"}
	a := &models.Account{Name: "dt", Platform: "dingtalk", Enabled: true, Healthy: true, AllowPrivateNetwork: true, MaxAttempts: 3,
		Config: cfg, Limits: models.Limits{PerRecipientPerDay: 500, PerMinute: 5000}}
	if err := store.CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	r := &models.Recipient{ExternalID: "E1", Name: "Li Wei", OrgType: models.Branch, Active: true}
	if err := store.CreateRecipient(ctx, r); err != nil {
		t.Fatal(err)
	}
	const audit, lunch = "Branch audit at 3 pm", "Canteen closed today"
	// u3 already had the audit notice today, sent outside Herald.
	dt, err := channels.NewDingTalk(cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dt.Send(ctx, channels.Message{ID: "before", To: "u3", MsgType: "text", Content: audit}); err != nil {
		t.Fatal(err)
	}
	calls.Store(0)

	b := &models.Batch{ID: models.NewID(), Source: "api", Platform: a.Platform, AccountID: a.ID, Priority: "normal"}
	now := time.Now()
	var msgs []models.Message
	for i := 1; i <= 12; i++ {
		content := audit
		if i > 10 {
			content = lunch
		}
		msgs = append(msgs, models.Message{ID: models.NewID(), BatchID: b.ID, RecipientID: r.ID, AccountID: a.ID, Platform: a.Platform,
			Address: "u" + strconv.Itoa(i), MsgType: "text", Content: content, Priority: "normal", Status: models.StatusPending,
			MaxAttempts: 3, SendAt: now, NextAttemptAt: &now, TaskID: tasks.ChunkTaskID(b.ID, 1)})
	}
	if err := store.CreateBatch(ctx, b, msgs, nil); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
	// A wide margin keeps each content's admissions in one call on a loaded machine.
	limiter, err := tasks.NewLimiter(tasks.LimiterConfig{Redis: red, Margin: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sender := newTestSender(t, store, red, tasks.SenderConfig{Limiter: limiter, CallTimeout: 5 * time.Second})
	task := tasks.NewSendMessageTask(tasks.Chunk(ids, "normal", now, func(string, int) string { return tasks.ChunkTaskID(b.ID, 1) })[0])
	if err := sender.ProcessTask(ctx, task); err != nil {
		t.Fatalf("the chunk asked to run again: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d asyncsend_v2 calls for two contents, want 2", n)
	}
	receipts := map[string]string{}
	for i, id := range ids {
		m, err := store.MessageWithRecipient(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if m.Address == "u3" {
			if m.Status != models.StatusFailed || m.ErrorClass != string(channels.RateLimited) || m.TaskID != id {
				t.Errorf("u3: %s (%s) carried by %q, want failed (rate_limited) on a task of its own", m.Status, m.ErrorClass, m.TaskID)
			}
			continue
		}
		if m.Status != models.StatusSent {
			t.Errorf("%s: %s (%s), want sent", m.Address, m.Status, m.LastError)
		}
		first, seen := receipts[msgs[i].Content]
		if !seen {
			first = m.ProviderMessageID
			receipts[msgs[i].Content] = first
		}
		if m.ProviderMessageID == "" || m.ProviderMessageID != first {
			t.Errorf("%s: provider id %q, want its call's task id %q", m.Address, m.ProviderMessageID, first)
		}
	}
	if len(receipts) != 2 || receipts[audit] == receipts[lunch] {
		t.Errorf("task ids by content %v, want one task per content", receipts)
	}
	if st := sim.Stats(); st.ByPlatform["dingtalk"] != 12 || st.DroppedSilently["dingtalk"] != 1 {
		t.Errorf("simulator delivered %d, dropped %d; want 12 (with the one before) and 1", st.ByPlatform["dingtalk"], st.DroppedSilently["dingtalk"])
	}
}
