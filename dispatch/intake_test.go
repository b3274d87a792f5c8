package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/audit"
	"herald/dispatch"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/message"
	"herald/models"
	"herald/tasks"
)

// intakeFixture is the demo data (a sandbox account, seven staff) with an API key, and a
// dispatcher that enqueues into a Redis of the test's own.
type intakeFixture struct {
	store *models.Store
	d     *dispatch.Dispatcher
	keyID int64
}

func newIntakeFixture(t *testing.T) *intakeFixture {
	t.Helper()
	ctx := context.Background()
	store := testenv.Store(t)
	if err := store.SeedDemo(ctx); err != nil {
		t.Fatal(err)
	}
	red, err := tasks.ParseRedisURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	enq := tasks.NewEnqueuer(red.Asynq())
	t.Cleanup(func() { enq.Close() })
	key, _, err := store.Access().CreateAPIKey(ctx, "intake", "send", "test")
	if err != nil {
		t.Fatal(err)
	}
	d, err := dispatch.NewDispatcher(dispatch.Config{Store: store, Enqueuer: enq, Location: time.UTC, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return &intakeFixture{store: store, keyID: key.ID, d: d}
}

// request is an API request to one person; an empty text makes it invalid.
func (f *intakeFixture) request(key, text string) dispatch.Request {
	return dispatch.Request{Source: "api", Actor: "apikey:intake", APIKeyID: &f.keyID, Platform: "sandbox",
		Recipients: []string{"E2001"}, Text: text, IdempotencyKey: key}
}

// messages counts every message the store holds.
func (f *intakeFixture) messages(t *testing.T) int {
	t.Helper()
	rows, err := f.store.ListMessages(context.Background(), models.MessageFilter{}, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// submission is what one SubmitIdempotent call came to, in words.
type submission struct {
	Outcome string
	// Body is the answer a replay sends; for a new batch, the answer respond built to
	// store ("" when none was).
	Body string
	// Messages is how many messages the store holds afterwards.
	Messages int
}

func TestSubmitIdempotent(t *testing.T) {
	t.Parallel()
	type call struct {
		key, canonical, text string
	}
	first := call{"order-1", `{"text":"first"}`, "first"}
	tests := []struct {
		name    string
		earlier []call
		// claim, when set, holds the key in flight as a request still being processed would.
		claim bool
		call  call
		want  submission
	}{
		{name: "no key sends every time", earlier: []call{{"", `{"text":"first"}`, "first"}},
			call: call{"", `{"text":"first"}`, "first"}, want: submission{"created", "", 2}},
		{name: "a new key sends", call: first, want: submission{"created", "answer 1", 1}},
		{name: "the same key and request replay the first answer", earlier: []call{first},
			call: first, want: submission{"replayed 202", "answer 1", 1}},
		{name: "the same request with another key sends", earlier: []call{first},
			call: call{"order-2", first.canonical, first.text}, want: submission{"created", "answer 2", 2}},
		{name: "the same key with another request is refused", earlier: []call{first},
			call: call{"order-1", `{"text":"second"}`, "second"}, want: submission{"mismatch", "", 1}},
		{name: "the same key in flight is refused", claim: true,
			call: first, want: submission{"in flight", "", 0}},
		{name: "a refused request does not keep its key", earlier: []call{{"order-1", `{"text":""}`, ""}},
			call: call{"order-1", `{"text":"second"}`, "second"}, want: submission{"created", "answer 1", 1}},
		{name: "an invalid request is refused", call: call{"order-1", `{"text":""}`, ""},
			want: submission{"invalid content.text", "", 0}},
		{name: "a key too long is refused", call: call{fmt.Sprintf("%0129d", 0), first.canonical, first.text},
			want: submission{"invalid idempotency_key", "", 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newIntakeFixture(t)
			ctx := context.Background()
			answers, lastAnswer := 0, ""
			submit := func(c call) (*dispatch.Result, *dispatch.Replay, error) {
				return f.d.SubmitIdempotent(ctx, f.request(c.key, c.text), []byte(c.canonical), func(*dispatch.Result) (int, []byte) {
					answers++
					lastAnswer = fmt.Sprintf("answer %d", answers)
					return 202, []byte(lastAnswer)
				})
			}
			for _, c := range tt.earlier {
				_, _, _ = submit(c)
			}
			lastAnswer = ""
			if tt.claim {
				if _, err := f.store.Intake().BeginIdempotent(ctx, f.keyID, tt.call.key, "another request"); err != nil {
					t.Fatal(err)
				}
			}
			res, replay, err := submit(tt.call)
			var got submission
			var fe *kernel.FieldError
			switch {
			case errors.Is(err, dispatch.ErrIdempotencyMismatch):
				got.Outcome = "mismatch"
			case errors.Is(err, dispatch.ErrIdempotencyInFlight):
				got.Outcome = "in flight"
			case errors.As(err, &fe):
				got.Outcome = "invalid " + fe.Field
			case err != nil:
				t.Fatal(err)
			case res != nil && replay == nil:
				got.Outcome, got.Body = "created", lastAnswer
			case replay != nil && res == nil:
				got.Outcome, got.Body = fmt.Sprintf("replayed %d", replay.StatusCode), string(replay.Body)
			default:
				t.Fatalf("result %v and replay %v: want exactly one", res, replay)
			}
			got.Messages = f.messages(t)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestSubmitIdempotentNeedsTheAPIKey(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	req := f.request("order-1", "first")
	req.APIKeyID = nil
	_, _, err := f.d.SubmitIdempotent(context.Background(), req, []byte("{}"), func(*dispatch.Result) (int, []byte) { return 202, nil })
	if err == nil || f.messages(t) != 0 {
		t.Errorf("a key without its API key: error %v, %d messages; want an error and none", err, f.messages(t))
	}
}

// stop ends a message as a permanent failure, as a worker would.
func (f *intakeFixture) stop(t *testing.T, id string) {
	t.Helper()
	ctx := context.Background()
	m, err := f.store.ClaimForSending(ctx, id, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.FinishAttempt(ctx, m, models.Outcome{Status: models.StatusStopped, ErrorClass: "permanent",
		Error: "rejected", CountsAttempt: true, Called: true, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// send submits one message to each person and returns the messages' ids in that order.
func (f *intakeFixture) send(t *testing.T, people ...string) []string {
	t.Helper()
	res, err := f.d.Submit(context.Background(), dispatch.Request{Source: "api", Platform: "sandbox", Recipients: people, Text: "Ledger 42"})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(res.Messages))
	for i, m := range res.Messages {
		ids[i] = m.ID
	}
	return ids
}

func (f *intakeFixture) statuses(t *testing.T, ids []string) []models.Status {
	t.Helper()
	out := make([]models.Status, len(ids))
	for i, id := range ids {
		m, err := f.store.MessageByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = m.Status
	}
	return out
}

func TestCancel(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	ctx := context.Background()
	ids := f.send(t, "E2001", "E2002")
	f.stop(t, ids[1])
	var errs []error
	for _, id := range []string{ids[0], ids[0], ids[1]} {
		_, err := f.d.Messages().CancelMessage(ctx, audit.System("test"), id)
		errs = append(errs, err)
	}
	if errs[0] != nil || !errors.Is(errs[1], kernel.ErrStateChanged) || !errors.Is(errs[2], kernel.ErrStateChanged) {
		t.Errorf("cancel pending, cancelled, stopped: %v; want nil, then ErrStateChanged twice", errs)
	}
	want := []models.Status{models.StatusCancelled, models.StatusStopped}
	if diff := cmp.Diff(want, f.statuses(t, ids)); diff != "" {
		t.Errorf("statuses (-want +got)\n%s", diff)
	}
}

func TestResendStopped(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	ctx := context.Background()
	stopped := f.send(t, "E2001", "E2002", "E2003")
	for _, id := range stopped {
		f.stop(t, id)
	}
	// A branch person: always receives, whatever the weekday.
	pending := f.send(t, "E2001")
	e2002, err := f.store.Directory().RecipientByExternalID(ctx, "E2002")
	if err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		name   string
		filter models.MessageFilter
		limit  int
		want   message.Resent
		after  []models.Status // of stopped, then pending
	}{
		{"one person's", models.MessageFilter{RecipientID: e2002.ID}, 100, message.Resent{Retried: 1},
			[]models.Status{models.StatusStopped, models.StatusPending, models.StatusStopped, models.StatusPending}},
		{"up to the limit", models.MessageFilter{}, 1, message.Resent{Retried: 1, Remaining: 1},
			[]models.Status{models.StatusPending, models.StatusPending, models.StatusStopped, models.StatusPending}},
		{"the rest", models.MessageFilter{Status: models.StatusStopped}, 100, message.Resent{Retried: 1},
			[]models.Status{models.StatusPending, models.StatusPending, models.StatusPending, models.StatusPending}},
		{"none left", models.MessageFilter{}, 100, message.Resent{},
			[]models.Status{models.StatusPending, models.StatusPending, models.StatusPending, models.StatusPending}},
	}
	for _, s := range steps {
		got, err := f.d.Messages().ResendStopped(ctx, audit.System("test"), s.filter, s.limit)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", s.name, diff)
		}
		if diff := cmp.Diff(s.after, f.statuses(t, slices.Concat(stopped, pending))); diff != "" {
			t.Errorf("%s: statuses (-want +got)\n%s", s.name, diff)
		}
	}
}
