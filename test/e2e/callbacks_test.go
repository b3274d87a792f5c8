package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"herald/access"
	"herald/channels"
	"herald/dispatch"
	"herald/internal/testenv"
	"herald/models"
	"herald/sending"
	"herald/simulator"
)

// callbackEvent is an event as a receiver decodes it.
type callbackEvent struct {
	ID         string  `json:"id"`
	Type       string  `json:"type"`
	MessageID  *string `json:"message_id"`
	BatchID    string  `json:"batch_id"`
	Recipient  *string `json:"recipient"`
	Platform   string  `json:"platform"`
	Status     string  `json:"status"`
	ErrorClass string  `json:"error_class"`
	OccurredAt string  `json:"occurred_at"`
}

// callbackReceiver is a calling system's endpoint: it checks each event's signature the
// way the README tells receivers to, and answers 503 while it is down.
type callbackReceiver struct {
	t      testing.TB
	url    string
	down   atomic.Bool
	secret atomic.Value // string

	mu       sync.Mutex
	events   []callbackEvent
	refused  int // requests answered 503
	problems []string
}

func newCallbackReceiver(t testing.TB) *callbackReceiver {
	r := &callbackReceiver{t: t}
	r.secret.Store("")
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/herald/events"
	return r
}

func (r *callbackReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down.Load() {
		r.refused++
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	var e callbackEvent
	if err := json.Unmarshal(body, &e); err != nil {
		r.problems = append(r.problems, "not JSON: "+string(body))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	sig := req.Header.Get(channels.WebhookSignatureHeader)
	ts, _, _ := strings.Cut(strings.TrimPrefix(sig, "t="), ",")
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig != channels.SignWebhook(r.secret.Load().(string), time.Unix(unix, 0), body) {
		r.problems = append(r.problems, fmt.Sprintf("event %s: bad signature %q", e.ID, sig))
	}
	if got := req.Header.Get("X-Herald-Event-Id"); got != e.ID {
		r.problems = append(r.problems, fmt.Sprintf("event %s came with X-Herald-Event-Id %q", e.ID, got))
	}
	r.events = append(r.events, e)
	w.WriteHeader(http.StatusNoContent)
}

// waitFor waits until n events arrived and returns them in arrival order.
func (r *callbackReceiver) waitFor(t testing.TB, n int, timeout time.Duration) []callbackEvent {
	t.Helper()
	testenv.WaitFor(t, timeout, fmt.Sprintf("%d callback events", n), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.events) >= n
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.problems {
		t.Error(p)
	}
	return slices.Clone(r.events)
}

// TestCallbacksReachTheCallerThroughOutageAndRestart: the events of a key's messages
// wait in the outbox while the receiver is down and while no Herald runs, and reach it,
// signed, once a process is back and the receiver is up; events of one message arrive
// in order, and batch.completed after the messages of its batch.
func TestCallbacksReachTheCallerThroughOutageAndRestart(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	rig := newFaultRig(t, env, 4, simulator.Faults{FailRate: 1})
	ctx := context.Background()
	none := 0
	rig.Account.RetryPolicy = sending.RetryPolicy{"transient": {MaxRetries: &none}}
	if err := rig.H.App.Store.Sending().SaveAccount(ctx, rig.Account); err != nil {
		t.Fatal(err)
	}
	recv := newCallbackReceiver(t)
	recv.down.Store(true)
	cb := &access.CallbackSetting{URL: recv.url, AllowPrivate: true}
	key, secret, err := rig.H.App.Store.Access().CreateCallbackAPIKey(ctx, "crm", "send,read", "test", access.KeyLimits{}, cb)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cb.Secret, "hcs_") {
		t.Fatalf("no signing secret made for the key: %q", cb.Secret)
	}
	recv.secret.Store(cb.Secret)

	res, err := rig.Dispatch.Submit(ctx, dispatch.Request{Source: "api", Actor: "apikey:crm", APIKeyID: &key.ID,
		CallbackKeyID: &key.ID, Account: rig.Account.Name, Recipients: rig.People, Text: "callback run"})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(res.Messages))
	for i, m := range res.Messages {
		ids[i] = m.ID
	}
	if c := rig.WaitTerminal(t, len(ids), time.Minute); c[models.StatusStopped] != len(ids) {
		t.Fatalf("with every call failing and no retry: %v", c)
	}
	// The receiver is down: every event waits in the outbox, none delivered.
	testenv.WaitFor(t, 20*time.Second, "a delivery attempt to the receiver that is down", func() bool {
		recv.mu.Lock()
		defer recv.mu.Unlock()
		return recv.refused > 0
	})
	if n := countRows(t, rig.H, "callback_events WHERE state = 'pending'"); n != len(ids)+1 {
		t.Fatalf("%d pending events in the outbox, want %d (one per message and batch.completed)", n, len(ids)+1)
	}
	rig.H.Stop()

	// Another process on the same database and Redis delivers them once the receiver is up.
	recv.down.Store(false)
	h2 := startHerald(t, env)
	events := recv.waitFor(t, len(ids)+1, 30*time.Second)
	stopped := map[string]callbackEvent{}
	for i, e := range events {
		switch e.Type {
		case models.EventMessageStopped:
			if e.MessageID == nil || e.Status != "stopped" || e.ErrorClass != "transient" || e.Platform != "tianyuan" ||
				e.Recipient == nil || !slices.Contains(rig.People, *e.Recipient) || e.BatchID != res.Batch.ID {
				t.Errorf("stopped event %+v", e)
				continue
			}
			stopped[*e.MessageID] = e
		case models.EventBatchCompleted:
			if i != len(events)-1 || e.BatchID != res.Batch.ID || e.MessageID != nil {
				t.Errorf("batch.completed at %d of %d: %+v", i, len(events), e)
			}
		default:
			t.Errorf("unexpected event %+v", e)
		}
	}
	if len(stopped) != len(ids) {
		t.Fatalf("message.stopped for %d messages, want %d: %+v", len(stopped), len(ids), events)
	}

	// A stopped message retried and sent: its second event comes after its first, and the
	// batch completes again.
	rig.Sim.SetFaults(simulator.Faults{})
	api := &apiClient{T: t, Base: h2.URL, Key: secret}
	if code, body, _ := api.Call("POST", "/api/v1/messages/"+ids[0]+"/retry", ""); code != http.StatusAccepted && code != http.StatusOK {
		t.Fatalf("retry: %d %v", code, body["_raw"])
	}
	events = recv.waitFor(t, len(ids)+3, 30*time.Second)
	var ofFirst []string
	completed := 0
	for _, e := range events {
		if e.MessageID != nil && *e.MessageID == ids[0] {
			ofFirst = append(ofFirst, e.Type)
		}
		if e.Type == models.EventBatchCompleted {
			completed++
		}
	}
	if want := []string{models.EventMessageStopped, models.EventMessageSent}; !slices.Equal(ofFirst, want) {
		t.Errorf("events of the retried message: %v, want %v", ofFirst, want)
	}
	if completed != 2 || events[len(events)-1].Type != models.EventBatchCompleted {
		t.Errorf("batch.completed %d times (want 2, the last event): %+v", completed, events)
	}

	// Cancelling a scheduled message is an event too.
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	code, body, _ := api.Call("POST", "/api/v1/messages", `{"account":"ty-fault","recipients":["F00001"],"content":{"text":"later"},"send_at":"`+later+`"}`)
	if code != http.StatusAccepted {
		t.Fatalf("send: %d %v", code, body["_raw"])
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("send answer: %v", body["_raw"])
	}
	cancelID, _ := msgs[0].(map[string]any)["id"].(string)
	if code, body, _ := api.Call("POST", "/api/v1/messages/"+cancelID+"/cancel", ""); code != http.StatusOK {
		t.Fatalf("cancel: %d %v", code, body["_raw"])
	}
	events = recv.waitFor(t, len(ids)+5, 30*time.Second)
	tail := events[len(events)-2:]
	if tail[0].Type != models.EventMessageCancelled || tail[0].MessageID == nil || *tail[0].MessageID != cancelID ||
		tail[1].Type != models.EventBatchCompleted {
		t.Errorf("after a cancel: %+v", tail)
	}
}
