package dispatch_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/channels"
	sandboxsender "herald/channels/sandbox"
	"herald/delivery"
	"herald/dispatch"
	"herald/duty"
	"herald/models"
	"herald/sending"
	"herald/silence"
	"herald/simulator"
	"herald/tasks"
	"herald/templates"
)

// How silences and digests meet the rest (README, "How digests meet the rest" and "How
// silences meet the rest"), each through the worker's own path: a tasks.Sender claims
// the messages, holds what an active silence matches and sends to the sandbox simulator.

// meetFixture is the silence fixture with a clock of the test's own for the dispatcher,
// a few minutes behind the real one: silences made by it are active by the real clock a
// worker holds by, and what it makes due is due by the real clock a worker claims by.
type meetFixture struct {
	*silenceFixture
	mu  sync.Mutex
	now time.Time
	sim *simulator.Simulator
}

func newMeetFixture(t *testing.T) *meetFixture {
	t.Helper()
	f := &meetFixture{silenceFixture: newSilenceFixture(t), now: time.Now().UTC().Add(-5 * time.Minute).Truncate(time.Second),
		sim: simulator.New(simulator.Faults{})}
	dispatch.SetClock(f.d, f.clock)
	return f
}

func (f *meetFixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// fold moves the clock on and folds the digest groups due then, as the poll would.
func (f *meetFixture) fold(t *testing.T, by time.Duration) int {
	t.Helper()
	f.mu.Lock()
	f.now = f.now.Add(by)
	f.mu.Unlock()
	n, err := f.d.FoldDueDigests(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// silence creates a silence from a minute before the fixture's clock for an hour.
func (f *meetFixture) silence(t *testing.T, onEnd string, matchers ...delivery.Matcher) *silence.Silence {
	t.Helper()
	start, end := f.clock().Add(-time.Minute), f.clock().Add(time.Hour)
	s, err := f.d.Silences().CreateSilence(context.Background(), user("ops"), silence.SilenceInput{Matchers: matchers, StartsAt: &start, EndsAt: &end,
		Comment: "core banking upgrade", OnEnd: onEnd})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// end expires silences early and runs the pass that ends them and releases what they
// held; it returns how many messages were released and cancelled.
func (f *meetFixture) end(t *testing.T, ids ...int64) (released, cancelled int) {
	t.Helper()
	f.expire(t, ids...)
	released, cancelled, err := f.d.ReleaseHeld(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return released, cancelled
}

// submit records a request of the fixture's API key (sandbox, a text, callbacks unless
// the request says otherwise) and returns the messages by external id.
func (f *meetFixture) submit(t *testing.T, req dispatch.Request) map[string]string {
	t.Helper()
	req.Source, req.Actor, req.APIKeyID, req.CallbackKeyID = "api", "apikey:zabbix", &f.keyID, &f.keyID
	req.Platform = "sandbox"
	if req.Text == "" {
		req.Text = "disk full"
	}
	res, err := f.d.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range res.Messages {
		out[res.Names[m.RecipientID]] = m.ID
	}
	return out
}

// worker is a worker process's sender on the fixture's database and Redis, sending to
// the fixture's simulator, with quiet hours judged by at in Shanghai (zero: the real
// clock). Each is fresh, so it reads the silences anew.
func (f *meetFixture) worker(t *testing.T, at time.Time) *tasks.Sender {
	t.Helper()
	return f.sender(t, func(c *tasks.SenderConfig) {
		if !at.IsZero() {
			c.Now = func() time.Time { return at }
		}
	})
}

// sender is a worker process's sender as worker makes it, with what set changes.
func (f *meetFixture) sender(t *testing.T, set func(*tasks.SenderConfig)) *tasks.Sender {
	t.Helper()
	limiter, err := tasks.NewLimiter(tasks.LimiterConfig{Redis: f.redis})
	if err != nil {
		t.Fatal(err)
	}
	enq := tasks.NewEnqueuer(f.redis.Asynq())
	t.Cleanup(func() { enq.Close() })
	cfg := tasks.SenderConfig{Store: f.store, Channels: channels.NewRegistry(sandboxsender.New(f.sim)), Enqueuer: enq,
		Limiter: limiter, Location: shanghai, CallTimeout: 5 * time.Second, Log: slog.New(slog.DiscardHandler)}
	set(&cfg)
	s, err := tasks.NewSender(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// run has a worker take the task of each message, one after another, as its queue would
// hand them out. A message that must wait asks its task to run again later (an error
// for Asynq's retry); the stored rows say what happened.
func (f *meetFixture) run(t *testing.T, w *tasks.Sender, ids ...string) {
	t.Helper()
	for _, id := range ids {
		m := f.message(t, id)
		_ = w.ProcessTask(context.Background(), tasks.NewSendMessageTask(tasks.Single(id, m.Priority, time.Now(), "")))
	}
}

func (f *meetFixture) message(t *testing.T, id string) *models.Message {
	t.Helper()
	m, err := f.store.MessageByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// statuses reads the status of each message.
func (f *meetFixture) statuses(t *testing.T, ids map[string]string) map[string]models.Status {
	t.Helper()
	out := map[string]models.Status{}
	for who, id := range ids {
		out[who] = f.status(t, id)
	}
	return out
}

// delivered counts what the simulator received, by address (the external id).
func (f *meetFixture) delivered() map[string]int {
	out := map[string]int{}
	for _, d := range f.sim.Deliveries() {
		out[d.To]++
	}
	return out
}

// heldBy lists the silences holding a message.
func (f *meetFixture) heldBy(t *testing.T, id string) []int64 {
	t.Helper()
	got, err := silence.Of(f.store).SilencesOfMessage(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// account edits the sandbox account.
func (f *meetFixture) account(t *testing.T, edit func(*sending.Account)) {
	t.Helper()
	a, err := f.store.Sending().AccountByName(context.Background(), models.SandboxAccountName)
	if err != nil {
		t.Fatal(err)
	}
	edit(a)
	if err := f.store.Sending().SaveAccount(context.Background(), a); err != nil {
		t.Fatal(err)
	}
}

// zhaohu adds a default Zhaohu account for fallback chains to reach; nothing is sent
// on it here.
func (f *meetFixture) zhaohu(t *testing.T) {
	t.Helper()
	a := &sending.Account{Name: "zh-main", Platform: "zhaohu", IsDefault: true, Enabled: true, AllowPrivateNetwork: true,
		MaxAttempts: 3, Healthy: true, Config: map[string]string{"base_url": "http://127.0.0.1:1/zhaohu", "path": "/messages", "token": "t0ken"}}
	if err := f.store.Sending().SaveAccount(context.Background(), a); err != nil {
		t.Fatal(err)
	}
}

// onDutyToday moves today's duty (by the fixture's clock, in UTC as its dispatcher
// reckons) from the people who had it to someone else, and returns that person.
func (f *meetFixture) onDutyToday(t *testing.T, had []string) string {
	t.Helper()
	ctx := context.Background()
	date, _ := duty.DateOf(f.clock(), time.UTC)
	other := ""
	for _, p := range []string{"E1001", "E1002", "E1003", "E1004"} {
		if !slices.Contains(had, p) {
			other = p
			break
		}
	}
	for _, p := range append(slices.Clone(had), other) {
		r, err := f.store.Directory().RecipientByExternalID(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		action := duty.OverrideRemove
		if p == other {
			action = duty.OverrideAdd
		}
		if err := f.store.Duty().SetOverride(ctx, &duty.DutyOverride{Date: date, RecipientID: r.ID, Action: action}); err != nil {
			t.Fatal(err)
		}
	}
	// The roster did change: a send now reaches the other person alone.
	res, err := f.d.Plan(ctx, dispatch.Request{Source: "api", Platform: "sandbox", ToOnDuty: true, Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	var now []string
	for _, m := range res.Messages {
		now = append(now, res.Names[m.RecipientID])
	}
	if diff := cmp.Diff([]string{other}, now); diff != "" {
		t.Fatalf("on duty after the overrides (-want +got):\n%s", diff)
	}
	return other
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A silence comes before quiet hours: a message released inside its account's quiet
// hours waits for them to end (a high one goes at once), with no attempt used.
func TestMeetSilenceThenQuietHours(t *testing.T) {
	t.Parallel()
	f := newMeetFixture(t)
	f.account(t, func(a *sending.Account) { a.QuietHours = sending.QuietHours{Start: "20:00", End: "08:00"} })
	// Night and morning in Shanghai on a day in the past, so the end of quiet hours is
	// due by the real clock.
	night := time.Date(2026, 1, 10, 23, 0, 0, 0, shanghai)
	morning := time.Date(2026, 1, 11, 8, 0, 0, 0, shanghai)
	sil := f.silence(t, delivery.OnEndRelease, match("department", "Counter"))
	normal := f.submit(t, dispatch.Request{Recipients: []string{"E2001"}})["E2001"]
	high := f.submit(t, dispatch.Request{Recipients: []string{"E2002"}, Priority: models.PriorityHigh})["E2002"]
	ids := map[string]string{"normal": normal, "high": high}

	f.run(t, f.worker(t, night), normal, high)
	want := map[string]models.Status{"normal": models.StatusHeld, "high": models.StatusHeld}
	if diff := cmp.Diff(want, f.statuses(t, ids)); diff != "" {
		t.Errorf("in the silence (-want +got):\n%s", diff)
	}
	if released, _ := f.end(t, sil.ID); released != 2 {
		t.Fatalf("released %d, want 2", released)
	}
	f.run(t, f.worker(t, night), normal, high)
	want = map[string]models.Status{"normal": models.StatusPending, "high": models.StatusSent}
	if diff := cmp.Diff(want, f.statuses(t, ids)); diff != "" {
		t.Errorf("released at night (-want +got):\n%s", diff)
	}
	m := f.message(t, normal)
	if m.ErrorClass != sending.ErrorClassQuietHours || m.Attempts != 0 || m.NextAttemptAt == nil || !m.NextAttemptAt.Equal(morning) {
		t.Errorf("released normal message at night: class %q, %d attempts, due %v; want waiting for quiet hours until %s",
			m.ErrorClass, m.Attempts, m.NextAttemptAt, morning)
	}
	if diff := cmp.Diff(map[string]int{"E2002": 1}, f.delivered()); diff != "" {
		t.Errorf("deliveries at night (-want +got):\n%s", diff)
	}
	f.run(t, f.worker(t, morning), normal)
	if diff := cmp.Diff(map[string]int{"E2001": 1, "E2002": 1}, f.delivered()); diff != "" {
		t.Errorf("deliveries in the morning (-want +got):\n%s", diff)
	}
}

// A batch awaiting approval has no due messages, so a silence holds none of them; once
// approved they meet the silence as they come due, and go when it ends.
func TestMeetSilenceThenApproval(t *testing.T) {
	t.Parallel()
	f := newMeetFixture(t)
	ctx := context.Background()
	if err := f.store.Intake().SetApprovalThreshold(ctx, 1, "test"); err != nil {
		t.Fatal(err)
	}
	f.d.ForgetThreshold()
	sil := f.silence(t, delivery.OnEndRelease, match("department", "Counter"))
	ids := f.submit(t, dispatch.Request{Recipients: []string{"E2001", "E2002"}})
	b, err := f.store.BatchByID(ctx, f.message(t, ids["E2001"]).BatchID)
	if err != nil || b.Approval != models.ApprovalAwaiting {
		t.Fatalf("batch %v (%v), want awaiting approval", b, err)
	}
	// A worker that comes to them (a stray task) finds nothing due: nothing is held.
	f.run(t, f.worker(t, time.Time{}), values(ids)...)
	for who, id := range ids {
		if st, by := f.status(t, id), f.heldBy(t, id); st != models.StatusPending || len(by) != 0 {
			t.Errorf("%s awaiting approval: %s, held by %v; want pending and held by none", who, st, by)
		}
	}
	if err := f.d.Approve(ctx, user("bob"), b); err != nil {
		t.Fatal(err)
	}
	f.run(t, f.worker(t, time.Time{}), values(ids)...)
	for who, id := range ids {
		if st, by := f.status(t, id), f.heldBy(t, id); st != models.StatusHeld || !slices.Equal(by, []int64{sil.ID}) {
			t.Errorf("%s approved: %s, held by %v; want held by %d", who, st, by, sil.ID)
		}
	}
	if n := len(f.delivered()); n != 0 {
		t.Errorf("%d people reached while the silence was active", n)
	}
	if released, _ := f.end(t, sil.ID); released != 2 {
		t.Fatalf("released %d, want 2", released)
	}
	f.run(t, f.worker(t, time.Time{}), values(ids)...)
	if diff := cmp.Diff(map[string]int{"E2001": 1, "E2002": 1}, f.delivered()); diff != "" {
		t.Errorf("deliveries after the silence (-want +got):\n%s", diff)
	}
}

// A held message has not stopped, so it does not fall back; released, it stops and
// falls back as usual, and the next message of its chain meets the silences active then.
func TestMeetSilenceThenFallback(t *testing.T) {
	t.Parallel()
	f := newMeetFixture(t)
	ctx := context.Background()
	f.zhaohu(t)
	f.sim.SetFaults(simulator.Faults{RejectRate: 1}) // every sandbox message stops
	first := f.submit(t, dispatch.Request{Recipients: []string{"E2001"}, Fallback: []string{"zhaohu"}})["E2001"]
	onSandbox := f.silence(t, delivery.OnEndRelease, match("platform", "sandbox"))

	f.run(t, f.worker(t, time.Time{}), first)
	if st := f.status(t, first); st != models.StatusHeld {
		t.Fatalf("first of the chain: %s, want held", st)
	}
	if made, err := f.d.FallBack(ctx); err != nil || made != 0 {
		t.Errorf("a held message fell back: %d made (%v)", made, err)
	}
	if m := f.message(t, first); m.FallbackDue || m.FallbackNext != nil {
		t.Errorf("held message: fallback due %v, next %v", m.FallbackDue, m.FallbackNext)
	}

	onZhaohu := f.silence(t, delivery.OnEndRelease, match("platform", "zhaohu"))
	if released, _ := f.end(t, onSandbox.ID); released != 1 {
		t.Fatalf("released %d, want 1", released)
	}
	f.run(t, f.worker(t, time.Time{}), first)
	if st := f.status(t, first); st != models.StatusStopped {
		t.Fatalf("released into a platform that rejects it: %s, want stopped", st)
	}
	if made, err := f.d.FallBack(ctx); err != nil || made != 1 {
		t.Fatalf("after it stopped: %d fallbacks made (%v), want 1", made, err)
	}
	m := f.message(t, first)
	if m.FallbackNext == nil {
		t.Fatal("the stopped message names no next message")
	}
	next := f.message(t, *m.FallbackNext)
	if next.Platform != "zhaohu" || next.FallbackOf == nil || *next.FallbackOf != first || next.Status != models.StatusPending {
		t.Errorf("next of the chain: %s, %s, of %v", next.Platform, next.Status, next.FallbackOf)
	}
	f.run(t, f.worker(t, time.Time{}), next.ID)
	if st, by := f.status(t, next.ID), f.heldBy(t, next.ID); st != models.StatusHeld || !slices.Equal(by, []int64{onZhaohu.ID}) {
		t.Errorf("next of the chain in a Zhaohu silence: %s, held by %v; want held by %d", st, by, onZhaohu.ID)
	}
}

// Duty is decided at intake: a held message keeps the recipient the duty rule chose,
// however the roster changes before the silence ends.
func TestMeetSilenceKeepsDutyRecipients(t *testing.T) {
	t.Parallel()
	f := newMeetFixture(t)
	ids := f.submit(t, dispatch.Request{ToOnDuty: true})
	had := keys(ids)
	if len(had) == 0 {
		t.Fatal("nobody on duty today in the demo roster")
	}
	recipient := map[string]int64{}
	for who, id := range ids {
		recipient[who] = f.message(t, id).RecipientID
	}
	sil := f.silence(t, delivery.OnEndRelease, match("api_key", "zabbix"))
	f.run(t, f.worker(t, time.Time{}), values(ids)...)
	for who, id := range ids {
		if st := f.status(t, id); st != models.StatusHeld {
			t.Errorf("%s: %s, want held", who, st)
		}
	}
	other := f.onDutyToday(t, had)
	if released, _ := f.end(t, sil.ID); released != len(ids) {
		t.Fatalf("released %d, want %d", released, len(ids))
	}
	f.run(t, f.worker(t, time.Time{}), values(ids)...)
	for who, id := range ids {
		if m := f.message(t, id); m.Status != models.StatusSent || m.RecipientID != recipient[who] {
			t.Errorf("%s after the silence: %s to recipient %d, want sent to %d", who, m.Status, m.RecipientID, recipient[who])
		}
	}
	want := map[string]int{}
	for _, who := range had {
		want[who] = 1
	}
	if diff := cmp.Diff(want, f.delivered()); diff != "" {
		t.Errorf("deliveries (-want +got); %s came on duty after intake:\n%s", other, diff)
	}
	rows, err := f.store.MessagesOfBatch(context.Background(), f.message(t, ids[had[0]]).BatchID, 100)
	if err != nil || len(rows) != len(ids) {
		t.Errorf("the batch has %d messages (%v), want %d", len(rows), err, len(ids))
	}
}

// Duty is decided at intake for digests too: only the people on duty then have a notice
// waiting, and their digests go to them however the roster changes before the window
// closes.
func TestMeetDigestKeepsDutyRecipients(t *testing.T) {
	t.Parallel()
	f := newMeetFixture(t)
	d := &templates.DigestRequest{Key: "night-batch", Window: "10s", Max: 20}
	first := f.submit(t, dispatch.Request{ToOnDuty: true, Subject: "日终批量 1 失败", Digest: d})
	second := f.submit(t, dispatch.Request{ToOnDuty: true, Subject: "日终批量 2 失败", Digest: d})
	had := keys(first)
	if len(had) == 0 || !slices.Equal(had, keys(second)) {
		t.Fatalf("on duty: %v then %v", had, keys(second))
	}
	f.onDutyToday(t, had)
	if n := f.fold(t, 10*time.Second); n != len(had) {
		t.Fatalf("%d digests, want one for each of %v", n, had)
	}
	for _, who := range had {
		a, b := f.message(t, first[who]), f.message(t, second[who])
		if a.Status != models.StatusDigested || a.DigestMessageID == nil || b.DigestMessageID == nil || *a.DigestMessageID != *b.DigestMessageID {
			t.Fatalf("%s's notices: %s into %v and %v; want both in one digest", who, a.Status, a.DigestMessageID, b.DigestMessageID)
		}
		if digest := f.message(t, *a.DigestMessageID); digest.RecipientID != a.RecipientID || digest.Subject != "2 条通知" {
			t.Errorf("%s's digest: recipient %d, subject %q; want %d, 2 条通知", who, digest.RecipientID, digest.Subject, a.RecipientID)
		}
	}
}

// The digest falls back along its first notice's chain.
func TestMeetDigestFallsBackAlongFirstChain(t *testing.T) {
	t.Parallel()
	f := newMeetFixture(t)
	ctx := context.Background()
	f.zhaohu(t)
	d := &templates.DigestRequest{Key: "k", Window: "10s", Max: 20}
	first := f.submit(t, dispatch.Request{Recipients: []string{"E2001"}, Subject: "一", Digest: d, Fallback: []string{"zhaohu"}})["E2001"]
	f.submit(t, dispatch.Request{Recipients: []string{"E2001"}, Subject: "二", Digest: d, Fallback: []string{"tianyuan", "zhaohu"}})
	f.submit(t, dispatch.Request{Recipients: []string{"E2001"}, Subject: "三", Digest: d})
	if n := f.fold(t, 10*time.Second); n != 1 {
		t.Fatalf("%d digests, want 1", n)
	}
	digest := f.message(t, *f.message(t, first).DigestMessageID)
	if digest.Fallback != "zhaohu" {
		t.Errorf("digest's chain %q, want the first notice's, zhaohu", digest.Fallback)
	}
	f.sim.SetFaults(simulator.Faults{RejectRate: 1})
	f.run(t, f.worker(t, time.Time{}), digest.ID)
	if made, err := f.d.FallBack(ctx); err != nil || made != 1 {
		t.Fatalf("the stopped digest: %d fallbacks made (%v), want 1", made, err)
	}
	digest = f.message(t, digest.ID)
	if digest.Status != models.StatusStopped || digest.FallbackNext == nil {
		t.Fatalf("digest: %s, next %v", digest.Status, digest.FallbackNext)
	}
	next := f.message(t, *digest.FallbackNext)
	if next.Platform != "zhaohu" || next.FallbackOf == nil || *next.FallbackOf != digest.ID || next.RecipientID != digest.RecipientID {
		t.Errorf("digest's fallback: %s, of %v, recipient %d", next.Platform, next.FallbackOf, next.RecipientID)
	}
}

// A digest counts once against the account's and the recipient's limits; the notices
// it carries use no attempt and no limit.
func TestMeetDigestCountsOnceUnderLimits(t *testing.T) {
	t.Parallel()
	f := newMeetFixture(t)
	f.account(t, func(a *sending.Account) { a.Limits = sending.Limits{PerMinute: 2, PerRecipientPerMinute: 1} })
	d := &templates.DigestRequest{Key: "k", Window: "1m", Max: 3}
	var notices []string
	for _, s := range []string{"一", "二", "三"} {
		notices = append(notices, f.submit(t, dispatch.Request{Recipients: []string{"E2001"}, Subject: s, Digest: d})["E2001"])
	}
	// The third filled the group: folded at once.
	var digestID string
	for _, id := range notices {
		m := f.message(t, id)
		if m.Status != models.StatusDigested || m.Attempts != 0 || m.TaskID != "" || m.DigestMessageID == nil {
			t.Fatalf("notice %s: %s, %d attempts, task %q; want digested with none", id, m.Status, m.Attempts, m.TaskID)
		}
		digestID = *m.DigestMessageID
	}
	f.run(t, f.worker(t, time.Time{}), notices...) // stray tasks of the notices send nothing
	f.run(t, f.worker(t, time.Time{}), digestID)
	if st := f.status(t, digestID); st != models.StatusSent {
		t.Fatalf("digest under a limit of one a person a minute: %s, want sent", st)
	}
	// After it, E2001 has no room left this minute and the account one message.
	later := f.submit(t, dispatch.Request{Recipients: []string{"E2001", "E2002", "E2003"}})
	w := f.worker(t, time.Time{})
	for _, who := range []string{"E2001", "E2002", "E2003"} {
		f.run(t, w, later[who])
	}
	want := map[string]models.Status{"E2001": models.StatusPending, "E2002": models.StatusSent, "E2003": models.StatusPending}
	if diff := cmp.Diff(want, f.statuses(t, later)); diff != "" {
		t.Errorf("messages after the digest (-want +got):\n%s", diff)
	}
	for _, who := range []string{"E2001", "E2003"} {
		if m := f.message(t, later[who]); m.ErrorClass != string(channels.Throttled) || m.Attempts != 0 {
			t.Errorf("%s after the digest: class %q, %d attempts; want throttled with none", who, m.ErrorClass, m.Attempts)
		}
	}
	if diff := cmp.Diff(map[string]int{"E2001": 1, "E2002": 1}, f.delivered()); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
}

// A digest matched by an active silence is held and, when the silence ends, released or
// cancelled like any message; the notices it carries stay digested.
func TestMeetSilenceHoldsDigest(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		onEnd     string
		want      models.Status
		delivered map[string]int
	}{
		{delivery.OnEndRelease, models.StatusSent, map[string]int{"E2001": 1, "E2002": 1}},
		{delivery.OnEndCancel, models.StatusCancelled, map[string]int{"E2002": 1}},
	} {
		t.Run(tt.onEnd, func(t *testing.T) {
			t.Parallel()
			f := newMeetFixture(t)
			sil := f.silence(t, tt.onEnd, match("recipient", "E2001"))
			d := &templates.DigestRequest{Key: "k", Window: "10s", Max: 20}
			first := f.submit(t, dispatch.Request{Recipients: []string{"E2001", "E2002"}, Subject: "一", Digest: d})
			second := f.submit(t, dispatch.Request{Recipients: []string{"E2001"}, Subject: "二", Digest: d})
			if n := f.fold(t, 10*time.Second); n != 2 {
				t.Fatalf("%d digests, want 2", n)
			}
			digests := map[string]string{}
			for who, id := range first {
				digests[who] = *f.message(t, id).DigestMessageID
			}
			f.run(t, f.worker(t, time.Time{}), values(digests)...)
			want := map[string]models.Status{"E2001": models.StatusHeld, "E2002": models.StatusSent}
			if diff := cmp.Diff(want, f.statuses(t, digests)); diff != "" {
				t.Errorf("digests in the silence (-want +got):\n%s", diff)
			}
			if by := f.heldBy(t, digests["E2001"]); !slices.Equal(by, []int64{sil.ID}) {
				t.Errorf("E2001's digest held by %v, want %d", by, sil.ID)
			}
			released, cancelled := f.end(t, sil.ID)
			if released+cancelled != 1 {
				t.Fatalf("released %d, cancelled %d; want the one digest", released, cancelled)
			}
			f.run(t, f.worker(t, time.Time{}), values(digests)...)
			if st := f.status(t, digests["E2001"]); st != tt.want {
				t.Errorf("E2001's digest after the silence: %s, want %s", st, tt.want)
			}
			if diff := cmp.Diff(tt.delivered, f.delivered()); diff != "" {
				t.Errorf("deliveries (-want +got):\n%s", diff)
			}
			for _, id := range []string{first["E2001"], second["E2001"]} {
				if st := f.status(t, id); st != models.StatusDigested {
					t.Errorf("notice %s: %s, want digested", id, st)
				}
			}
		})
	}
}
