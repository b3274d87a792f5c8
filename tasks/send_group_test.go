package tasks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"herald/channels"
	"herald/directory"
	"herald/models"
	"herald/sending"
	"herald/simulator"
	"herald/tasks"
)

// TestChunkSendsInGroups: a chunk's DingTalk messages that share their content go in
// one call per content; each is finished with its own outcome: the people who already
// had their content today are held back by DingTalk, and their messages wait for a
// retry together, on one task of the chunk's waiting messages, to go in groups again.
func TestChunkSendsInGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, red := storeAndRedis(t)
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
	a := &sending.Account{Name: "dt", Platform: "dingtalk", Enabled: true, Healthy: true, AllowPrivateNetwork: true, MaxAttempts: 3,
		Config: cfg, Limits: sending.Limits{PerRecipientPerDay: 500, PerMinute: 5000}}
	if err := store.Sending().CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	r := &directory.Recipient{ExternalID: "E1", Name: "Li Wei", OrgType: directory.Branch, Active: true}
	if err := store.Directory().CreateRecipient(ctx, r); err != nil {
		t.Fatal(err)
	}
	const audit, lunch = "Branch audit at 3 pm", "Canteen closed today"
	// u3 and u4 already had the audit notice today, u12 the lunch one, sent outside
	// Herald.
	dt, err := channels.NewDingTalk(cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]string{"u3": audit, "u4": audit, "u12": lunch}
	for to, content := range before {
		if _, err := dt.Send(ctx, channels.Message{ID: "before-" + to, To: to, MsgType: "text", Content: content}); err != nil {
			t.Fatal(err)
		}
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
	var retried []string
	retry := map[string]string{} // what the retried messages share: their task and due time
	for i, id := range ids {
		m, err := store.MessageWithRecipient(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if before[m.Address] != "" {
			if m.Status != models.StatusFailed || m.ErrorClass != string(channels.RateLimited) || m.TaskID == id {
				t.Errorf("%s: %s (%s) carried by %q, want failed (rate_limited) on the chunk's retry task", m.Address, m.Status, m.ErrorClass, m.TaskID)
			}
			retried = append(retried, id)
			retry[m.TaskID+" due "+m.NextAttemptAt.UTC().Format(time.RFC3339Nano)] += m.Address + " "
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
	if st := sim.Stats(); st.ByPlatform["dingtalk"] != 12 || st.DroppedSilently["dingtalk"] != 3 {
		t.Errorf("simulator delivered %d, dropped %d; want 12 (with the three before) and 3", st.ByPlatform["dingtalk"], st.DroppedSilently["dingtalk"])
	}
	if len(retry) != 1 {
		t.Fatalf("the held-back messages wait on %v, want one task and one due time", retry)
	}
	var carried []string
	enq := tasks.NewEnqueuer(red.Asynq())
	t.Cleanup(func() { enq.Close() })
	for key := range retry {
		taskID, _, _ := strings.Cut(key, " ")
		payload, ok, err := enq.ScheduledPayload(ctx, tasks.QueueFor("normal"), taskID)
		if err != nil || !ok {
			t.Fatalf("the retry task %s is not in the schedule: %v", taskID, err)
		}
		var p tasks.SendMessagePayload
		if err := json.Unmarshal(payload, &p); err != nil {
			t.Fatal(err)
		}
		carried = p.IDs()
	}
	if diff := cmp.Diff(retried, carried, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("the retry task carries (-held back +carried):\n%s", diff)
	}
}

// TestChunkSendsWeComInGroups: a chunk's WeCom messages that share their content go in
// one message/send with every person in touser; the people WeCom names in invaliduser
// and unlicenseduser end stopped (permanent, with that code), the others sent with the
// call's msgid, and a second content goes in a call of its own.
func TestChunkSendsWeComInGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, red := storeAndRedis(t)
	sim := simulator.New(simulator.Faults{})
	sim.SetWeComDirectory(simulator.WeComDirectory{Unknown: []string{"w3"}, Unlicensed: []string{"w4", "w12"}})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wecom/cgi-bin/message/send" {
			calls.Add(1)
		}
		sim.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	a := &sending.Account{Name: "wx", Platform: "wecom", Enabled: true, Healthy: true, AllowPrivateNetwork: true, MaxAttempts: 3,
		Config: map[string]string{"corp_id": "ww1", "secret": "s", "agent_id": "1000002", "base_url": srv.URL + "/wecom"},
		Limits: sending.Limits{PerRecipientPerMinute: 30, PerRecipientPerHour: 1000}}
	if err := store.Sending().CreateAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	r := &directory.Recipient{ExternalID: "E1", Name: "Li Wei", OrgType: directory.Branch, Active: true}
	if err := store.Directory().CreateRecipient(ctx, r); err != nil {
		t.Fatal(err)
	}
	const audit, lunch = "Branch audit at 3 pm", "Canteen closed today"
	b := &models.Batch{ID: models.NewID(), Source: "api", Platform: a.Platform, AccountID: a.ID, Priority: "normal"}
	now := time.Now()
	var msgs []models.Message
	for i := 1; i <= 12; i++ {
		content := audit
		if i > 10 {
			content = lunch
		}
		msgs = append(msgs, models.Message{ID: models.NewID(), BatchID: b.ID, RecipientID: r.ID, AccountID: a.ID, Platform: a.Platform,
			Address: "w" + strconv.Itoa(i), MsgType: "text", Content: content, Priority: "normal", Status: models.StatusPending,
			MaxAttempts: 3, SendAt: now, NextAttemptAt: &now, TaskID: tasks.ChunkTaskID(b.ID, 1)})
	}
	if err := store.CreateBatch(ctx, b, msgs, nil); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.ID
	}
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
		t.Errorf("%d message/send calls for twelve people and two contents, want 2", n)
	}
	refused := map[string]string{"w3": "invaliduser", "w4": "unlicenseduser", "w12": "unlicenseduser"}
	msgids := map[string]string{} // the call's msgid, by content
	for i, id := range ids {
		m, err := store.MessageWithRecipient(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if code := refused[m.Address]; code != "" {
			attempts, err := store.AttemptsOf(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if m.Status != models.StatusStopped || m.ErrorClass != string(channels.Permanent) || len(attempts) != 1 || attempts[0].ProviderCode != code {
				t.Errorf("%s: %s (%s) after %d attempts, want stopped (permanent, %s) after one", m.Address, m.Status, m.ErrorClass, len(attempts), code)
			}
			continue
		}
		if m.Status != models.StatusSent {
			t.Errorf("%s: %s (%s), want sent", m.Address, m.Status, m.LastError)
		}
		first, seen := msgids[msgs[i].Content]
		if !seen {
			first = m.ProviderMessageID
			msgids[msgs[i].Content] = first
		}
		if m.ProviderMessageID == "" || m.ProviderMessageID != first {
			t.Errorf("%s: msgid %q, want its call's %q", m.Address, m.ProviderMessageID, first)
		}
	}
	if len(msgids) != 2 || msgids[audit] == msgids[lunch] {
		t.Errorf("msgids by content %v, want one call per content", msgids)
	}
	got := map[string]bool{}
	for _, d := range sim.Deliveries() {
		got[d.To] = true
	}
	want := map[string]bool{}
	for i := 1; i <= 12; i++ {
		if to := "w" + strconv.Itoa(i); refused[to] == "" {
			want[to] = true
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WeCom delivered to (-want +got):\n%s", diff)
	}
}

// A chunk's messages share a call when they share account and content, up to the
// platform's most; a chat post and a notice of an alert (its card's buttons name it)
// each go alone.
func TestGroupByContent(t *testing.T) {
	t.Parallel()
	alert, chat := int64(7), int64(9)
	msg := func(id string, account int64, content string) *models.Message {
		return &models.Message{ID: id, AccountID: account, MsgType: "text", Content: content}
	}
	ms := []*models.Message{msg("a", 1, "x"), msg("b", 1, "x"), msg("c", 1, "y"), msg("d", 2, "x"), msg("e", 1, "x"),
		msg("f", 1, "x"), msg("g", 1, "x"), msg("h", 1, "x")}
	ms[5].AlertID, ms[6].AlertID, ms[7].ChatGroupID = &alert, &alert, &chat
	var got [][]string
	for _, g := range tasks.GroupByContent(ms, 2) {
		var ids []string
		for _, m := range g {
			ids = append(ids, m.ID)
		}
		got = append(got, ids)
	}
	want := [][]string{{"a", "b"}, {"c"}, {"d"}, {"e"}, {"f"}, {"g"}, {"h"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
}
