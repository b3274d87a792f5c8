package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"herald/alert"
	"herald/delivery"
	"herald/dispatch"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
	"herald/silence"
	"herald/tasks"
	"herald/templates"
)

// silenceFixture is the demo data, a Redis of the test's own, and a way to start a
// dispatcher on them as each worker process (or a restarted one) has its own.
type silenceFixture struct {
	store     *models.Store
	redis     *tasks.Redis
	inspector *asynq.Inspector
	d         *dispatch.Dispatcher
	keyID     int64
}

func newSilenceFixture(t *testing.T) *silenceFixture {
	t.Helper()
	ctx := context.Background()
	f := &silenceFixture{store: testenv.Store(t)}
	if err := f.store.SeedDemo(ctx); err != nil {
		t.Fatal(err)
	}
	red, err := tasks.ParseRedisURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	f.redis = red
	f.inspector = asynq.NewInspector(red.Asynq())
	t.Cleanup(func() { f.inspector.Close() })
	key, _, err := f.store.Access().CreateAPIKey(ctx, "zabbix", "send", "ops")
	if err != nil {
		t.Fatal(err)
	}
	f.keyID = key.ID
	f.d = f.dispatcher(t)
	return f
}

// dispatcher starts another dispatcher on the fixture's database and Redis.
func (f *silenceFixture) dispatcher(t *testing.T) *dispatch.Dispatcher {
	t.Helper()
	enq := tasks.NewEnqueuer(f.redis.Asynq())
	t.Cleanup(func() { enq.Close() })
	d, err := dispatch.NewDispatcher(dispatch.Config{Store: f.store, Enqueuer: enq, Location: time.UTC, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// send submits a text to people through the fixture's API key, with its callbacks, and
// returns the message ids by external id.
func (f *silenceFixture) send(t *testing.T, priority models.Priority, people ...string) map[string]string {
	t.Helper()
	res, err := f.d.Submit(context.Background(), dispatch.Request{Source: "api", Actor: "apikey:zabbix", APIKeyID: &f.keyID,
		CallbackKeyID: &f.keyID, Platform: "sandbox", Recipients: people, Text: "disk full", Priority: priority})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range res.Messages {
		out[res.Names[m.RecipientID]] = m.ID
	}
	return out
}

// silence creates a silence from a minute ago for an hour.
func (f *silenceFixture) silence(t *testing.T, onEnd string, matchers ...delivery.Matcher) *silence.Silence {
	t.Helper()
	start, end := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	s, err := f.d.Silences().CreateSilence(context.Background(), user("ops"), silence.SilenceInput{Matchers: matchers, StartsAt: &start, EndsAt: &end,
		Comment: "core banking upgrade", OnEnd: onEnd})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hold holds messages as a worker does when it comes to claim them.
func (f *silenceFixture) hold(t *testing.T, ids []string, silences ...int64) {
	t.Helper()
	holds := map[string][]int64{}
	for _, id := range ids {
		holds[id] = silences
	}
	held, _, err := silence.Of(f.store).HoldMessages(context.Background(), holds, nil, time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != len(ids) {
		t.Fatalf("held %d of %d messages", len(held), len(ids))
	}
}

func (f *silenceFixture) status(t *testing.T, id string) models.Status {
	t.Helper()
	m, err := f.store.MessageByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m.Status
}

func (f *silenceFixture) expire(t *testing.T, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if _, err := f.d.Silences().ExpireSilence(context.Background(), user("ops"), id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.d.Silences().EndSilences(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func match(name, value string) delivery.Matcher { return delivery.Matcher{Name: name, Value: value} }

// Bad silences are refused naming the field, and nothing is written.
func TestSilenceValidation(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	ctx := context.Background()
	now := time.Now()
	hour, past := now.Add(time.Hour), now.Add(-time.Hour)
	ok := silence.SilenceInput{Matchers: []delivery.Matcher{match("platform", "wecom")}, EndsAt: &hour, Comment: "upgrade"}
	tests := []struct {
		name  string
		edit  func(*silence.SilenceInput)
		field string
	}{
		{"unknown matcher name", func(in *silence.SilenceInput) { in.Matchers = append(in.Matchers, match("host", "db1")) }, "matchers[1].name"},
		{"invalid regex", func(in *silence.SilenceInput) {
			in.Matchers = []delivery.Matcher{{Name: "template", Value: "disk-(", Regex: true}}
		}, "matchers[0].value"},
		{"Perl-only regex", func(in *silence.SilenceInput) {
			in.Matchers = []delivery.Matcher{{Name: "template", Value: `(?=disk)`, Regex: true}}
		}, "matchers[0].value"},
		{"no end", func(in *silence.SilenceInput) { in.EndsAt = nil }, "ends_at"},
		{"end not after start", func(in *silence.SilenceInput) { in.StartsAt = &hour }, "ends_at"},
		{"end passed", func(in *silence.SilenceInput) {
			start := now.Add(-2 * time.Hour)
			in.StartsAt, in.EndsAt = &start, &past
		}, "ends_at"},
		{"no comment", func(in *silence.SilenceInput) { in.Comment = " " }, "comment"},
		{"on_end", func(in *silence.SilenceInput) { in.OnEnd = "drop" }, "on_end"},
	}
	for _, tt := range tests {
		in := ok
		in.Matchers = slices.Clone(ok.Matchers)
		tt.edit(&in)
		_, err := f.d.Silences().CreateSilence(ctx, user("ops"), in)
		var fe *kernel.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%s: %v, want a field error naming %s", tt.name, err, tt.field)
		}
	}
	if _, err := f.d.Silences().Silences(ctx, user("ops"), "paused"); err == nil {
		t.Error("state paused: no error")
	}
	list, err := silence.Of(f.store).Silences(ctx, 0, time.Time{}, 10)
	if err != nil || len(list) != 0 {
		t.Errorf("after refused silences the store has %d (%v)", len(list), err)
	}
}

// What a silence sees of a message, read from its rows: each matcher name.
func TestSilenceSubjects(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	ctx := context.Background()
	ids := f.send(t, models.PriorityLow, "E2003")
	subjects, err := silence.Of(f.store).SilenceSubjects(ctx, values(ids), time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := delivery.Subject{"platform": "sandbox", "account": models.SandboxAccountName, "template": "", "department": "Credit",
		"recipient": "E2003", "priority": "low", "api_key": "zabbix", "policy": "", delivery.SubjectKeyID: strconv.FormatInt(f.keyID, 10)}
	if diff := cmp.Diff(want, subjects[ids["E2003"]]); diff != "" {
		t.Errorf("subject (-want +got):\n%s", diff)
	}
}

// A held message records its silence and its message.held event; it is not claimable
// and the sweeper does not look for its task.
func TestHoldRecordsSilenceAndEvent(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	ctx := context.Background()
	sil := f.silence(t, delivery.OnEndRelease, match("recipient", "E2001"))
	id := f.send(t, models.PriorityNormal, "E2001")["E2001"]
	f.hold(t, []string{id}, sil.ID)
	m, err := f.store.MessageByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != models.StatusHeld || m.NextAttemptAt != nil || m.Attempts != 0 {
		t.Errorf("held message: %s, next %v, %d attempts", m.Status, m.NextAttemptAt, m.Attempts)
	}
	if got, _ := silence.Of(f.store).SilencesOfMessage(ctx, id); !slices.Equal(got, []int64{sil.ID}) {
		t.Errorf("silences of the message: %v, want [%d]", got, sil.ID)
	}
	var events int
	if err := f.store.SQL().QueryRow("SELECT COUNT(*) FROM callback_events WHERE message_id = ? AND type = ?", id, models.EventMessageHeld).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 1 {
		t.Errorf("%d message.held events, want 1", events)
	}
	found, token, err := f.store.ClaimMany(ctx, []string{id}, time.Now().Add(time.Minute))
	if err != nil || found[id].Claimed(token) {
		t.Errorf("a held message was claimed (%v)", err)
	}
	due, err := f.store.DueMessages(ctx, time.Now().Add(time.Hour), models.DueCursor{}, 10)
	if err != nil || slices.ContainsFunc(due, func(d models.DueMessage) bool { return d.ID == id }) {
		t.Errorf("the sweeper sees a held message as due (%v)", err)
	}
	// A second hold of the same message changes nothing.
	if held, _, err := silence.Of(f.store).HoldMessages(ctx, map[string][]int64{id: {sil.ID}}, nil, time.Now().Add(time.Second)); err != nil || len(held) != 0 {
		t.Errorf("held again: %v, %v", held, err)
	}
}

// A worker's view of the silences may be a second old: a silence expired meanwhile holds
// nothing more, so a message its end released is not held again by it.
func TestHoldSkipsASilenceThatEndedMeanwhile(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	ctx := context.Background()
	sil := f.silence(t, delivery.OnEndRelease, match("recipient", "E2001"))
	id := f.send(t, models.PriorityNormal, "E2001")["E2001"]
	if err := silence.Of(f.store).ExpireSilence(ctx, sil.ID, "admin1", time.Now()); err != nil {
		t.Fatal(err)
	}
	held, _, err := silence.Of(f.store).HoldMessages(ctx, map[string][]int64{id: {sil.ID}}, nil, time.Now().Add(time.Second))
	if err != nil || len(held) != 0 {
		t.Fatalf("held by an expired silence: %v, %v", held, err)
	}
	m, err := f.store.MessageByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != models.StatusPending {
		t.Errorf("the message is %s, want pending", m.Status)
	}
	if got, _ := silence.Of(f.store).SilencesOfMessage(ctx, id); len(got) != 0 {
		t.Errorf("silences of the message: %v, want none", got)
	}
}

// At its end a silence releases what it held, highest priority first and then oldest,
// due now and carried by new tasks; one that cancels cancels, with the events; a
// message held by two silences waits for both.
func TestSilenceEndReleasesOrCancels(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	ctx := context.Background()
	release := f.silence(t, delivery.OnEndRelease, match("department", "Counter"))
	cancel := f.silence(t, delivery.OnEndCancel, match("recipient", "E2003"))
	both := f.silence(t, delivery.OnEndRelease, match("recipient", "E2002"))

	low := f.send(t, models.PriorityLow, "E2001", "E2002")
	high := f.send(t, models.PriorityHigh, "E2001")
	normal := f.send(t, models.PriorityNormal, "E2001")
	cancelled := f.send(t, models.PriorityHigh, "E2003")["E2003"]
	f.hold(t, []string{low["E2001"], high["E2001"], normal["E2001"]}, release.ID)
	f.hold(t, []string{low["E2002"]}, release.ID, both.ID)
	f.hold(t, []string{cancelled}, cancel.ID)

	f.expire(t, release.ID, cancel.ID)
	free, err := silence.Of(f.store).FreeHeldMessages(ctx, time.Now(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, m := range free {
		order = append(order, m.ID)
	}
	// E2002's message waits for the other silence; the cancelled one comes by its priority.
	want := []string{high["E2001"], cancelled, normal["E2001"], low["E2001"]}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("release order (-want +got):\n%s", diff)
	}
	released, n, err := f.d.ReleaseHeld(ctx)
	if err != nil || released != 3 || n != 1 {
		t.Fatalf("released %d, cancelled %d (%v); want 3 and 1", released, n, err)
	}
	got := map[string]models.Status{}
	for _, id := range []string{high["E2001"], normal["E2001"], low["E2001"], low["E2002"], cancelled} {
		got[id] = f.status(t, id)
	}
	wantStatus := map[string]models.Status{high["E2001"]: models.StatusPending, normal["E2001"]: models.StatusPending,
		low["E2001"]: models.StatusPending, low["E2002"]: models.StatusHeld, cancelled: models.StatusCancelled}
	if diff := cmp.Diff(wantStatus, got); diff != "" {
		t.Errorf("after the first two ended (-want +got):\n%s", diff)
	}
	var events int
	if err := f.store.SQL().QueryRow("SELECT COUNT(*) FROM callback_events WHERE message_id = ? AND type = ?", cancelled, models.EventMessageCancelled).Scan(&events); err != nil || events != 1 {
		t.Errorf("%d message.cancelled events (%v), want 1", events, err)
	}
	f.expire(t, both.ID)
	if released, _, err := f.d.ReleaseHeld(ctx); err != nil || released != 1 || f.status(t, low["E2002"]) != models.StatusPending {
		t.Errorf("after the last ended: released %d (%v), E2002 %s", released, err, f.status(t, low["E2002"]))
	}
	if jobs := releaseTasks(t, f); len(jobs) != 4 {
		t.Errorf("release tasks carry %d messages, want 4: %v", len(jobs), jobs)
	}
}

// releaseTasks lists the messages the release tasks in Redis carry, by task.
func releaseTasks(t *testing.T, f *silenceFixture) map[string]string {
	t.Helper()
	out := map[string]string{}
	for queue := range tasks.MessageQueues {
		list, err := f.inspector.ListPendingTasks(queue, asynq.PageSize(1000))
		if err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
			t.Fatal(err)
		}
		for _, task := range list {
			var p tasks.SendMessagePayload
			if err := json.Unmarshal(task.Payload, &p); err != nil {
				t.Fatal(err)
			}
			for _, id := range p.IDs() {
				if prev, dup := out[id]; dup && isRelease(prev) && isRelease(task.ID) {
					t.Errorf("message %s in release tasks %s and %s", id, prev, task.ID)
				}
				if isRelease(task.ID) {
					out[id] = task.ID
				}
			}
		}
	}
	return out
}

// isRelease reports whether a task is one a silence's release enqueued.
func isRelease(taskID string) bool { return strings.Contains(taskID, ":release-") }

// A worker that ends a silence and dies before it releases anything, then several
// workers releasing at once: every message is released once, in one task.
func TestSilenceReleaseOnceAcrossRestart(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	ctx := context.Background()
	sil := f.silence(t, delivery.OnEndRelease, match("platform", "sandbox"))
	var ids []string
	for range 5 {
		ids = append(ids, values(f.send(t, models.PriorityNormal, "E2001", "E2002", "E2003"))...)
	}
	ids = append(ids, values(f.send(t, models.PriorityHigh, "E2001", "E2002", "E2003"))...)
	f.hold(t, ids, sil.ID)
	// The first worker ends it, and stops there.
	f.expire(t, sil.ID)
	if n, err := f.d.Silences().EndSilences(ctx); err != nil || n != 0 {
		t.Errorf("ended again: %d (%v)", n, err)
	}
	// Restarted workers, releasing together.
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 3 {
		d := f.dispatcher(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, _, err := d.ReleaseHeld(ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != len(ids) {
		t.Errorf("released %d in all, want %d", total, len(ids))
	}
	carried := releaseTasks(t, f)
	for _, id := range ids {
		m, err := f.store.MessageByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if m.Status != models.StatusPending || carried[id] != m.TaskID {
			t.Errorf("message %s: %s, task %q, carried by %q", id, m.Status, m.TaskID, carried[id])
		}
	}
	var audits int
	if err := f.store.SQL().QueryRow("SELECT COUNT(*) FROM audit_log WHERE action = 'silence.end'").Scan(&audits); err != nil || audits != 1 {
		t.Errorf("%d silence.end entries (%v), want 1", audits, err)
	}
}

// A silence that matches everything, or lasts more than a day, waits for a second
// person: it holds nothing until then, its maker cannot approve it, a rejection expires
// it. An edit that needs approval waits again.
func TestSilenceApproval(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	ctx := context.Background()
	now := time.Now()
	day, week := now.Add(time.Hour), now.Add(7*24*time.Hour)
	tests := []struct {
		name     string
		matchers []delivery.Matcher
		ends     *time.Time
		awaiting bool
	}{
		{"narrow and short", []delivery.Matcher{match("department", "Counter")}, &day, false},
		{"matches everything", nil, &day, true},
		{"matches everything by regex", []delivery.Matcher{{Name: "platform", Value: ".*", Regex: true}}, &day, true},
		{"longer than a day", []delivery.Matcher{match("department", "Counter")}, &week, true},
	}
	for _, tt := range tests {
		s, err := f.d.Silences().CreateSilence(ctx, user("ada"), silence.SilenceInput{Matchers: tt.matchers, EndsAt: tt.ends, Comment: tt.name})
		if err != nil {
			t.Fatal(err)
		}
		live, err := silence.Of(f.store).LiveSilences(ctx)
		if err != nil {
			t.Fatal(err)
		}
		isLive := slices.ContainsFunc(live, func(l silence.Silence) bool { return l.ID == s.ID })
		if (s.Approval == models.ApprovalAwaiting) != tt.awaiting || isLive == tt.awaiting {
			t.Errorf("%s: approval %q, live %v", tt.name, s.Approval, isLive)
		}
		if !tt.awaiting {
			continue
		}
		if s.State(time.Now()) != delivery.SilencePending {
			t.Errorf("%s: %s while awaiting approval", tt.name, s.State(time.Now()))
		}
		if err := f.d.Silences().DecideSilence(ctx, user("ada"), s.ID, true); !errors.Is(err, silence.ErrOwnSilence) {
			t.Errorf("%s: its maker approving: %v", tt.name, err)
		}
	}
	awaiting, err := f.d.Silences().Silences(ctx, user("bob"), delivery.SilencePending)
	if err != nil || len(awaiting) != 3 {
		t.Fatalf("%d pending (%v), want 3", len(awaiting), err)
	}
	if err := f.d.Silences().DecideSilence(ctx, user("bob"), awaiting[0].ID, true); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Silences().DecideSilence(ctx, user("bob"), awaiting[1].ID, false); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Silences().DecideSilence(ctx, user("bob"), awaiting[1].ID, true); !errors.Is(err, kernel.ErrStateChanged) {
		t.Errorf("approving a rejected silence: %v", err)
	}
	for i, want := range []string{delivery.SilenceActive, delivery.SilenceExpired} {
		s, err := silence.Of(f.store).SilenceByID(ctx, awaiting[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.State(time.Now()); got != want {
			t.Errorf("silence %d decided: %s, want %s", s.ID, got, want)
		}
	}
	// Widened to everything by its approver: it waits again, and they cannot approve it.
	s, err := f.d.Silences().UpdateSilence(ctx, user("bob"), awaiting[0].ID, silence.SilenceInput{EndsAt: &day, Comment: "wider"})
	if err != nil || s.Approval != models.ApprovalAwaiting {
		t.Fatalf("widened: %v, %v", s, err)
	}
	if err := f.d.Silences().DecideSilence(ctx, user("bob"), s.ID, true); !errors.Is(err, silence.ErrOwnSilence) {
		t.Errorf("the editor approving: %v", err)
	}
}

// An alert's notices are held only by a silence that names its policy.
func TestSilenceHoldsAlertNoticesByPolicy(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	ctx := context.Background()
	if err := alert.Of(f.store).CreatePolicy(ctx, &alert.EscalationPolicy{Name: "core-banking",
		Steps: []alert.PolicyStep{{Targets: []string{"E2001"}, Wait: "10m"}}}); err != nil {
		t.Fatal(err)
	}
	res, err := f.d.Submit(ctx, dispatch.Request{Source: "api", Actor: "apikey:zabbix", APIKeyID: &f.keyID, Platform: "sandbox",
		Recipients: []string{"E2002"}, Text: "core banking down", Ack: &dispatch.AckRequest{Policy: "core-banking"}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range res.Messages {
		ids = append(ids, m.ID)
	}
	subjects, err := silence.Of(f.store).SilenceSubjects(ctx, ids, time.Now().Add(time.Second))
	if err != nil || len(subjects) == 0 {
		t.Fatalf("subjects %v (%v)", subjects, err)
	}
	for _, tt := range []struct {
		matchers []delivery.Matcher
		want     bool
	}{
		{[]delivery.Matcher{match("platform", "sandbox")}, false},
		{[]delivery.Matcher{match("api_key", "zabbix")}, false},
		{[]delivery.Matcher{match("policy", "core-banking")}, true},
		{[]delivery.Matcher{match("policy", "payments")}, false},
	} {
		rule, err := delivery.NewSilenceRule(1, tt.matchers)
		if err != nil {
			t.Fatal(err)
		}
		for id, s := range subjects {
			if got := rule.Matches(s); got != tt.want {
				t.Errorf("%v on notice %s (%v): %v, want %v", tt.matchers, id, s, got, tt.want)
			}
		}
	}
}

// The preview counts the last day's messages the matchers would have held.
func TestSilencePreview(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	f.send(t, models.PriorityNormal, "E2001", "E2002", "E2003")
	f.send(t, models.PriorityHigh, "E2001")
	for _, tt := range []struct {
		matchers []delivery.Matcher
		want     int
	}{
		{nil, 4},
		{[]delivery.Matcher{match("department", "Counter")}, 3},
		{[]delivery.Matcher{match("department", "Counter"), {Name: "priority", Value: "high", Negate: true}}, 2},
		{[]delivery.Matcher{{Name: "recipient", Value: "E200[13]", Regex: true}}, 3},
	} {
		p, err := f.d.Silences().PreviewSilence(context.Background(), user("ops"), silence.SilenceInput{Matchers: tt.matchers})
		if err != nil || p.Held != tt.want || !p.Complete {
			t.Errorf("%v: %+v (%v), want %d", tt.matchers, p, err, tt.want)
		}
	}
	if _, err := f.d.Silences().PreviewSilence(context.Background(), user("ops"), silence.SilenceInput{Matchers: []delivery.Matcher{{Name: "host", Value: "x"}}}); err == nil {
		t.Error("a bad matcher previewed")
	}
}

// A matcher that compares a value must name something there is: a template's display
// name, a misspelt account or an unknown person is refused naming the value, with the
// values near it; an expression or a negation is taken as written.
func TestSilenceValueNamesSomething(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	ctx := context.Background()
	if err := f.store.Templates().CreateTemplate(ctx, &templates.Template{Name: "disk-full", DisplayName: "磁盘将满", MsgType: "text",
		Body: "磁盘将满"}); err != nil {
		t.Fatal(err)
	}
	hour := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		matcher delivery.Matcher
		key     string
		near    string
	}{
		{match("template", "磁盘将满"), "silences.check.unknown_value_near", "disk-full"},
		{match("account", "sandbx"), "silences.check.unknown_value_near", "sandbox"},
		{match("department", "counter"), "silences.check.unknown_value_near", "Counter"},
		{match("recipient", "E9999"), "silences.check.unknown_value", ""},
		{match("policy", "nightly"), "silences.check.unknown_value", ""},
		{match("priority", "urgent"), "silences.check.unknown_value", ""},
	} {
		_, err := f.d.Silences().CreateSilence(ctx, user("ada"), silence.SilenceInput{
			Matchers: []delivery.Matcher{match("platform", "sandbox"), tc.matcher}, EndsAt: &hour, Comment: "upgrade"})
		var fe *kernel.FieldError
		if !errors.As(err, &fe) || fe.Field != "matchers[1].value" || fe.Key != tc.key || !strings.Contains(fmt.Sprint(fe.Args...), tc.near) {
			t.Errorf("%+v: %v, want %s naming matchers[1].value near %q", tc.matcher, err, tc.key, tc.near)
		}
	}
	if _, all, err := silence.Of(f.store).LiveSilenceCounts(ctx, 0, "ada"); err != nil || all != 0 {
		t.Fatalf("silences written by refused requests: %d %v", all, err)
	}
	for _, m := range []delivery.Matcher{match("template", "disk-full"), match("recipient", "E1001"),
		{Name: "template", Value: "disk-.*", Regex: true}, {Name: "account", Value: "gone", Negate: true}} {
		if _, err := f.d.Silences().CreateSilence(ctx, user("ada"), silence.SilenceInput{Matchers: []delivery.Matcher{m}, EndsAt: &hour, Comment: "upgrade"}); err != nil {
			t.Errorf("%+v: %v", m, err)
		}
	}
}
