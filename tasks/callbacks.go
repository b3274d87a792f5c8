package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"herald/access"
	"herald/channels"
	"herald/kernel"
	"herald/models"
)

// TypeDeliverCallbacks delivers the due status events of one API key. Its task id is
// fixed per key, so at most one waits or runs at a time; the recovery pass enqueues it
// for every key with due events, which catches anything a kick missed.
const TypeDeliverCallbacks = "callbacks:deliver"

// QueueCallbacks holds the callback deliveries, apart from the messages: a slow
// receiver must not hold up a send, and no operator sees callbacks in a message queue.
const QueueCallbacks = "callbacks"

// callbackTaskID names the one delivery task of a key.
func callbackTaskID(keyID int64) string { return "callbacks:" + strconv.FormatInt(keyID, 10) }

type callbackPayload struct {
	KeyID int64 `json:"api_key_id"`
}

// Callback delivery tuning.
const (
	// callbackTimeout bounds one POST to a receiver.
	callbackTimeout = 10 * time.Second
	// callbackRun bounds one delivery task; what is left waits for the next.
	callbackRun = 50 * time.Second
	// callbackLease outlives a run: a runner that died frees the key after it.
	callbackLease = callbackRun + 2*callbackTimeout
	// callbackWindow is how many pending events one pass reads.
	callbackWindow = 500
	// callbackWorkers is how many events of different messages go out at once.
	callbackWorkers = 8
	// callbackGiveUpPass: this many failures in a row end a pass (the receiver is
	// probably down); the events wait for their next attempt.
	callbackGiveUpPass = 3
	// callbackMaxDelay caps the wait between two attempts of an event.
	callbackMaxDelay = 5 * time.Minute
	// kickEvery bounds how often one process enqueues a key's task after outcomes.
	kickEvery = 200 * time.Millisecond
)

// Callbacks delivers status events from the outbox to each key's callback URL, signed
// like webhook messages, at least once and in order per message. It is the handler of
// TypeDeliverCallbacks.
type Callbacks struct {
	Store *models.Store
	// Enqueuer enqueues delivery tasks; nil leaves them to the recovery pass.
	Enqueuer *Enqueuer
	Log      *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu     sync.Mutex
	kicked map[int64]time.Time
}

func (c *Callbacks) now() time.Time {
	if c.Now != nil {
		return c.Now().UTC()
	}
	return kernel.Now()
}

// Kick asks for a key's events to be delivered soon: it enqueues the key's task unless
// this process did so a moment ago. It never blocks the caller.
func (c *Callbacks) Kick(keyID int64) {
	if c == nil || c.Enqueuer == nil {
		return
	}
	now := time.Now()
	c.mu.Lock()
	if c.kicked == nil {
		c.kicked = map[int64]time.Time{}
	}
	if now.Sub(c.kicked[keyID]) < kickEvery {
		c.mu.Unlock()
		return
	}
	c.kicked[keyID] = now
	c.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.enqueue(ctx, keyID); err != nil {
			c.Log.Warn("tasks: enqueue callback delivery", "api_key_id", keyID, "error", err)
		}
	}()
}

func (c *Callbacks) enqueue(ctx context.Context, keyID int64) error {
	payload, _ := json.Marshal(callbackPayload{KeyID: keyID})
	_, err := c.Enqueuer.client.EnqueueContext(ctx, asynq.NewTask(TypeDeliverCallbacks, payload),
		asynq.TaskID(callbackTaskID(keyID)), asynq.Queue(QueueCallbacks), asynq.MaxRetry(0), asynq.Timeout(callbackLease))
	if err == nil {
		c.Enqueuer.woke(ctx, 1)
	}
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) && !errors.Is(err, asynq.ErrDuplicateTask) {
		return err
	}
	return nil
}

// KickDue enqueues the task of every key with due events. The recovery pass calls it
// every few seconds: a kick lost with Redis, a task that ended just as an event was
// written, and retries that became due all end up here.
func (c *Callbacks) KickDue(ctx context.Context) error {
	if c == nil || c.Enqueuer == nil {
		return nil
	}
	keys, err := c.Store.Outbox().DueCallbackKeys(ctx, c.now())
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := c.enqueue(ctx, k); err != nil {
			return fmt.Errorf("tasks: enqueue callback delivery: %w", err)
		}
	}
	return nil
}

// ProcessTask implements asynq.Handler.
func (c *Callbacks) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p callbackPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return fmt.Errorf("tasks: callback payload: %v: %w", err, asynq.SkipRetry)
	}
	return c.Deliver(ctx, p.KeyID)
}

// eventBody is what a receiver gets.
type eventBody struct {
	ID         string  `json:"id"`
	Type       string  `json:"type"`
	MessageID  *string `json:"message_id"`
	BatchID    string  `json:"batch_id"`
	Recipient  *string `json:"recipient"`
	Platform   string  `json:"platform"`
	Status     string  `json:"status"`
	ErrorClass string  `json:"error_class"`
	OccurredAt string  `json:"occurred_at"`
	// An alert's event (alert.*) also names the alert, the step it had reached, its
	// round as the alert API counts it (repeat, from 0), and who acknowledged or
	// resolved it; its status is the alert's state.
	AlertID *int64  `json:"alert_id,omitempty"`
	Step    *int    `json:"step,omitempty"`
	Repeat  *int    `json:"repeat,omitempty"`
	By      *string `json:"by,omitempty"`
	// DigestMessageID is the message that carried a digested notice.
	DigestMessageID *string `json:"digest_message_id,omitempty"`
}

// EventBody returns the JSON body of an event, as it is posted.
func EventBody(e models.EventDelivery) []byte {
	body := eventBody{ID: e.EventID, Type: e.Type, MessageID: e.MessageID, BatchID: e.BatchID,
		Recipient: e.Recipient, Platform: e.Platform, Status: e.Status, ErrorClass: e.ErrorClass,
		OccurredAt: e.OccurredAt.UTC().Format(time.RFC3339Nano), DigestMessageID: e.DigestMessageID}
	if e.AlertID != nil {
		step, repeat, by := 0, 0, e.AlertBy
		if e.AlertStep != nil {
			step = *e.AlertStep
		}
		if e.AlertRound != nil {
			repeat = max(*e.AlertRound-1, 0)
		}
		body.AlertID, body.Step, body.Repeat, body.By = e.AlertID, &step, &repeat, &by
	}
	b, _ := json.Marshal(body)
	return b
}

// Deliver posts a key's due events until none is left, the run's time is up, or the
// receiver keeps failing. One runner per key at a time (a lease on the key's row).
func (c *Callbacks) Deliver(ctx context.Context, keyID int64) error {
	start := c.now()
	until := start.Add(callbackLease)
	ok, err := c.Store.Outbox().LeaseCallbacks(ctx, keyID, start, until)
	if err != nil || !ok {
		return err
	}
	defer func() {
		if err := c.Store.Outbox().ReleaseCallbacks(context.WithoutCancel(ctx), keyID, until); err != nil {
			c.Log.Warn("tasks: release callbacks", "api_key_id", keyID, "error", err)
		}
	}()
	target, err := c.Store.Access().CallbackTargetOf(ctx, keyID)
	if errors.Is(err, kernel.ErrNotFound) {
		// The key's callback was removed: its events wait, failed, for an operator to
		// set one and send them again.
		return c.Store.Outbox().FailPendingCallbacks(ctx, keyID, channels.Note{Key: "callbacks.no_url"}.Rendered(), c.now())
	}
	if err != nil {
		return err
	}
	client := channels.NewHTTPClient(target.AllowPrivate, callbackTimeout)
	defer client.CloseIdleConnections()
	for c.now().Sub(start) < callbackRun && ctx.Err() == nil {
		events, err := c.Store.Outbox().PendingCallbackEvents(ctx, keyID, callbackWindow)
		if err != nil {
			return err
		}
		results, stop := c.pass(ctx, client, target, events)
		if len(results) == 0 {
			return nil
		}
		if err := c.Store.Outbox().RecordCallbackResults(context.WithoutCancel(ctx), results, c.now()); err != nil {
			return err
		}
		if stop {
			return nil
		}
	}
	return nil
}

// pass delivers what of events may go now: events of one message one after another in
// order, different messages at once, and a batch's batch.completed after every earlier
// event of its batch went out. An event waits while an earlier event of its message (or,
// for batch.completed, of its batch) is not due or failed. stop says the receiver seems
// down.
func (c *Callbacks) pass(ctx context.Context, client *http.Client, target *access.CallbackTarget, events []models.EventDelivery) ([]models.EventResult, bool) {
	now := c.now()
	heldMsg, heldBatch := map[string]bool{}, map[string]bool{}
	var order []string
	chains := map[string][]models.EventDelivery{}
	var completions []models.EventDelivery
	for _, e := range events {
		due := !e.NextAttemptAt.After(now)
		if e.MessageID == nil {
			if !due || heldBatch[e.BatchID] {
				heldBatch[e.BatchID] = true
				continue
			}
			completions = append(completions, e)
			continue
		}
		id := *e.MessageID
		if !due || heldMsg[id] {
			heldMsg[id], heldBatch[e.BatchID] = true, true
			continue
		}
		if chains[id] == nil {
			order = append(order, id)
		}
		chains[id] = append(chains[id], e)
	}

	var (
		mu       sync.Mutex
		results  []models.EventResult
		failures int
		failed   = map[string]bool{} // batches with an event that did not go
	)
	post := func(e models.EventDelivery) bool {
		err := c.post(ctx, client, target, e)
		mu.Lock()
		defer mu.Unlock()
		r := models.EventResult{Seq: e.Seq}
		if err != nil {
			r.Err, r.Retry = channels.Describe(err).Rendered(), c.now().Add(callbackDelay(e.Attempts))
			failures++
			failed[e.BatchID] = true
		} else {
			failures = 0
		}
		results = append(results, r)
		return err == nil
	}
	tooMany := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return failures >= callbackGiveUpPass
	}
	next := make(chan string)
	var wg sync.WaitGroup
	for range min(callbackWorkers, len(order)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range next {
				for _, e := range chains[id] {
					if tooMany() || ctx.Err() != nil || !post(e) {
						mu.Lock()
						failed[e.BatchID] = true
						mu.Unlock()
						break
					}
				}
			}
		}()
	}
	for _, id := range order {
		if tooMany() {
			break
		}
		next <- id
	}
	close(next)
	wg.Wait()
	for _, e := range completions {
		if tooMany() || ctx.Err() != nil {
			break
		}
		if failed[e.BatchID] || heldBatch[e.BatchID] {
			continue
		}
		post(e)
	}
	return results, tooMany()
}

// post delivers one event.
func (c *Callbacks) post(ctx context.Context, client *http.Client, target *access.CallbackTarget, e models.EventDelivery) error {
	header := http.Header{"X-Herald-Event-Id": {e.EventID}, "User-Agent": {"Herald"}}
	return channels.PostSigned(ctx, client, target.URL, target.Secret, header, EventBody(e), c.now())
}

// callbackDelay is the wait after an event's attempts-th failure: 1 s doubling, capped
// at callbackMaxDelay, with jitter so many events do not come due together.
func callbackDelay(attempts int) time.Duration {
	d := callbackMaxDelay
	if attempts < 16 {
		d = min(callbackMaxDelay, time.Second<<attempts)
	}
	return d/2 + rand.N(d/2+1)
}
