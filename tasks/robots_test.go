package tasks_test

import (
	"cmp"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"herald/channels"
	"herald/directory"
	"herald/internal/testenv"
	"herald/models"
	"herald/sending"
	"herald/simulator"
	"herald/tasks"
)

// settableClock is the clock a robot test moves: the simulator's, the limiter's (and
// so the robots' holds').
type settableClock struct{ nanos atomic.Int64 }

func (c *settableClock) Now() time.Time          { return time.Unix(0, c.nanos.Load()) }
func (c *settableClock) Advance(d time.Duration) { c.nanos.Add(int64(d)) }

// robotRig is a group robot account on the simulator, with a worker whose limiter runs
// on the test's clock.
type robotRig struct {
	store   *models.Store
	red     *tasks.Redis
	clock   *settableClock
	sim     *simulator.Simulator
	url     string
	account *sending.Account
	group   int64
	rcpt    int64
	// msgType is the posts' type ("" for text).
	msgType string
}

func newRobotRig(t *testing.T, platform string, tokens ...string) *robotRig {
	t.Helper()
	ctx := context.Background()
	rig := &robotRig{store: testenv.Store(t), clock: &settableClock{}}
	rig.clock.nanos.Store(time.Now().UnixNano())
	var err error
	if rig.red, err = tasks.ParseRedisURL(testenv.RedisURL(t)); err != nil {
		t.Fatal(err)
	}
	rig.sim = simulator.NewWithOptions(simulator.Faults{}, simulator.Options{Now: rig.clock.Now})
	srv := httptest.NewServer(rig.sim.Handler())
	t.Cleanup(srv.Close)
	rig.url = srv.URL
	var urls []string
	for _, tok := range tokens {
		urls = append(urls, srv.URL+"/dingtalk-bot/robot/send?access_token="+tok)
	}
	rig.account = &sending.Account{Name: "ops-bot", Platform: platform, Enabled: true, Healthy: true, AllowPrivateNetwork: true, MaxAttempts: 3,
		Config: map[string]string{"webhook_url": strings.Join(urls, "\n")}, Limits: sending.Limits{PerMinute: 20}}
	if err := rig.store.Sending().CreateAccount(ctx, rig.account); err != nil {
		t.Fatal(err)
	}
	// Group posts name no person; the row still has a recipient column to fill.
	r := &directory.Recipient{ExternalID: "E1", Name: "Li Wei", OrgType: directory.Branch, Active: true}
	if err := rig.store.Directory().CreateRecipient(ctx, r); err != nil {
		t.Fatal(err)
	}
	rig.rcpt, rig.group = r.ID, 7 // the chat group's id: any will do here
	return rig
}

// worker is one worker process: its own limiter (on the test's clock) and sender.
func (rig *robotRig) worker(t *testing.T) *tasks.Sender {
	t.Helper()
	limiter, err := tasks.NewLimiter(tasks.LimiterConfig{Redis: rig.red, Now: rig.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return newTestSender(t, rig.store, rig.red, tasks.SenderConfig{Limiter: limiter, CallTimeout: 5 * time.Second})
}

// post writes n group posts to the account's chat group, due now, each with a task of
// its own, and returns their ids.
func (rig *robotRig) post(t *testing.T, n int) []string {
	t.Helper()
	a := rig.account
	b := &models.Batch{ID: models.NewID(), Source: "api", Platform: a.Platform, AccountID: a.ID, Priority: "normal"}
	now := time.Now()
	msgs := make([]models.Message, n)
	ids := make([]string, n)
	for i := range msgs {
		id := models.NewID()
		group := rig.group
		msgs[i] = models.Message{ID: id, BatchID: b.ID, RecipientID: rig.rcpt, AccountID: a.ID, Platform: a.Platform,
			Address: "ops-core", ChatGroupID: &group, Mentions: models.MentionsText([]channels.Mention{{Name: "Li Wei", UserID: "liwei"}}),
			MsgType: cmp.Or(rig.msgType, "text"), Content: "db-01 disk 95%", Priority: "normal", Status: models.StatusPending,
			MaxAttempts: 3, SendAt: now, NextAttemptAt: &now, TaskID: tasks.SendTaskID(id, "")}
		ids[i] = id
	}
	if err := rig.store.CreateBatch(context.Background(), b, msgs, nil); err != nil {
		t.Fatal(err)
	}
	return ids
}

// run runs each message's own task once on a worker; a task that asks to run again
// later is the message waiting, which the test checks in the rows.
func (rig *robotRig) run(t *testing.T, w *tasks.Sender, ids []string, step time.Duration) {
	t.Helper()
	for _, id := range ids {
		_ = w.ProcessTask(context.Background(), tasks.NewSendMessageTask(tasks.Single(id, "normal", time.Now(), "")))
		rig.clock.Advance(step)
	}
}

// waiting returns the messages not sent, failing the test on any that are lost
// (stopped) or waiting for another reason than want.
func (rig *robotRig) waiting(t *testing.T, ids []string, want ...string) []string {
	t.Helper()
	var out []string
	for _, id := range ids {
		m, err := rig.store.MessageWithRecipient(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Status == models.StatusSent:
			continue
		case m.Status.Terminal() || !slices.Contains(want, m.ErrorClass):
			t.Errorf("message %s: %s (%s: %s), want sent or waiting as %v", id, m.Status, m.ErrorClass, m.LastError, want)
		}
		out = append(out, id)
	}
	return out
}

// passTime moves the clocks on by d: the simulator's and the limiter's, and the
// waiting rows' due times, which the database compares with its own.
func (rig *robotRig) passTime(t *testing.T, ids []string, d time.Duration) {
	t.Helper()
	rig.clock.Advance(d)
	err := rig.store.DB().Writer(context.Background()).Exec("UPDATE messages SET next_attempt_at = ? WHERE id IN ?",
		time.Now().UTC().Add(-time.Second), ids).Error
	if err != nil {
		t.Fatal(err)
	}
}

// fillFromElsewhere posts 20 times through a robot outside Herald, filling its minute,
// as another system posting through the same robot would.
func (rig *robotRig) fillFromElsewhere(t *testing.T, token string) {
	t.Helper()
	for range 20 {
		resp, err := http.Post(rig.url+"/dingtalk-bot/robot/send?access_token="+token, "application/json",
			strings.NewReader(`{"msgtype":"text","text":{"content":"from elsewhere"}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
}

// maxIn is the most deliveries to one group in any window of length w.
func maxIn(ds []simulator.Delivery, group string, w time.Duration) int {
	var at []int64
	for _, d := range ds {
		if d.Group == group {
			at = append(at, d.ReceivedAtMs)
		}
	}
	slices.Sort(at)
	best, lo := 0, 0
	for hi := range at {
		for at[lo] <= at[hi]-w.Milliseconds() {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// 25 posts in 10 s to one DingTalk robot: the robot never sees more than 20 in any
// minute, the rest wait as throttled and go when the minute has passed, and nothing is
// refused or dropped.
func TestDingTalkRobotKeepsTwentyAMinute(t *testing.T) {
	rig := newRobotRig(t, channels.DingTalkBot, "ops")
	ids := rig.post(t, 25)
	rig.run(t, rig.worker(t), ids, 400*time.Millisecond)
	waiting := rig.waiting(t, ids, string(channels.Throttled))
	if len(waiting) != 5 {
		t.Fatalf("%d posts waiting after the first 10 s, want 5", len(waiting))
	}
	rig.passTime(t, waiting, time.Minute)
	rig.run(t, rig.worker(t), waiting, 0)
	if left := rig.waiting(t, ids); len(left) != 0 {
		t.Errorf("%d posts still waiting after a minute", len(left))
	}
	ds := rig.sim.Deliveries()
	if len(ds) != 25 || maxIn(ds, "ops", time.Minute) > 20 {
		t.Errorf("%d posts delivered, at most %d in a minute; want 25, never more than 20", len(ds), maxIn(ds, "ops", time.Minute))
	}
	if len(ds) > 0 && (len(ds[0].Mentions) != 1 || ds[0].Mentions[0] != "liwei") {
		t.Errorf("the post @s %v, want liwei", ds[0].Mentions)
	}
	st := rig.sim.Stats()
	for p, n := range st.DroppedSilently {
		if n != 0 {
			t.Errorf("%d dropped silently on %s", n, p)
		}
	}
}

// A pool of two robots takes 40 posts a minute, 20 through each.
func TestRobotPoolTakesEachRobotsLimit(t *testing.T) {
	rig := newRobotRig(t, channels.DingTalkBot, "a", "b")
	ids := rig.post(t, 45)
	rig.run(t, rig.worker(t), ids, 100*time.Millisecond)
	if waiting := rig.waiting(t, ids, string(channels.Throttled)); len(waiting) != 5 {
		t.Errorf("%d posts waiting, want 5", len(waiting))
	}
	ds := rig.sim.Deliveries()
	if len(ds) != 40 || maxIn(ds, "a", time.Minute) != 20 || maxIn(ds, "b", time.Minute) != 20 {
		t.Errorf("%d posts in the minute, %d through a and %d through b; want 40, 20 each", len(ds), maxIn(ds, "a", time.Minute), maxIn(ds, "b", time.Minute))
	}
	// The console shows the pool's use against the pool's limit.
	limiter, err := tasks.NewLimiter(tasks.LimiterConfig{Redis: rig.red, Now: rig.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	usage, err := limiter.AccountUsage(context.Background(), rig.account)
	if err != nil || len(usage) != 1 || usage[0].Used != 40 || usage[0].Limit != 40 {
		t.Errorf("pool usage %+v %v, want 40 of per_minute 40", usage, err)
	}
}

// A robot DingTalk refuses with 130101 (someone else posted through it) is held ten
// minutes by every worker; its post waits and goes after them, and nothing is lost.
func TestDingTalkRobotRefusalHoldsItTenMinutes(t *testing.T) {
	rig := newRobotRig(t, channels.DingTalkBot, "ops")
	rig.fillFromElsewhere(t, "ops")
	ids := rig.post(t, 2)
	rig.run(t, rig.worker(t), ids[:1], 0)
	first, err := rig.store.MessageWithRecipient(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if first.Status != models.StatusFailed || first.ErrorClass != string(channels.RateLimited) || first.NextAttemptAt == nil ||
		first.NextAttemptAt.Sub(time.Now()) < 9*time.Minute {
		t.Fatalf("refused post: %s (%s) due %v, want failed (rate_limited) for ten minutes", first.Status, first.ErrorClass, first.NextAttemptAt)
	}
	// Another worker holds the robot too: its post waits, without calling DingTalk.
	rig.clock.Advance(2 * time.Minute)
	rig.run(t, rig.worker(t), ids[1:], 0)
	second, err := rig.store.MessageWithRecipient(context.Background(), ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if second.Status != models.StatusPending || second.ErrorClass != string(channels.Throttled) || second.NextAttemptAt.Sub(time.Now()) < 7*time.Minute {
		t.Errorf("post while the robot is held: %s (%s) due %v, want pending (throttled) until the hold ends", second.Status, second.ErrorClass, second.NextAttemptAt)
	}
	if st := rig.sim.Stats(); st.Requests != 0 && st.ByPlatform[channels.DingTalkBot] != 20 {
		t.Errorf("stats %+v: a post got through during the hold", st)
	}
	rig.passTime(t, ids, 8*time.Minute+time.Second)
	rig.run(t, rig.worker(t), ids, 0)
	if left := rig.waiting(t, ids); len(left) != 0 {
		t.Errorf("%d posts still waiting after the hold", len(left))
	}
	if n := len(rig.sim.Deliveries()); n != 22 {
		t.Errorf("%d deliveries, want the 20 from elsewhere and Herald's 2", n)
	}
}

// In a pool, the robot DingTalk refused is held while the others go on: one post waits
// for it, every other goes through the robot that has room.
func TestRobotPoolGoesOnWhileOneRobotIsHeld(t *testing.T) {
	rig := newRobotRig(t, channels.DingTalkBot, "a", "b")
	rig.fillFromElsewhere(t, "a")
	ids := rig.post(t, 4)
	rig.run(t, rig.worker(t), ids, 0)
	if waiting := rig.waiting(t, ids, string(channels.RateLimited)); len(waiting) != 1 {
		t.Errorf("%d posts waiting, want the one robot a refused", len(waiting))
	}
	if got := maxIn(rig.sim.Deliveries(), "b", time.Minute); got != 3 {
		t.Errorf("%d posts through robot b, want the other 3", got)
	}
}

// A group post of a WeCom application goes to its group chat (appchat/send) and one of
// a Feishu app to its chat (receive_id_type=chat_id), each recorded with its chat id and
// the person it @s.
func TestAppGroupChatPosts(t *testing.T) {
	rig := newRobotRig(t, channels.DingTalkBot, "unused")
	accounts := []*sending.Account{
		{Name: "wecom-app", Platform: "wecom", Config: map[string]string{"corp_id": "c", "agent_id": "1", "secret": "s", "base_url": rig.url + "/wecom"}},
		{Name: "feishu-app", Platform: "feishu", Config: map[string]string{"app_id": "a", "app_secret": "s", "base_url": rig.url + "/feishu"}},
	}
	var ids []string
	for _, a := range accounts {
		a.Enabled, a.Healthy, a.AllowPrivateNetwork, a.MaxAttempts = true, true, true, 3
		if err := rig.store.Sending().CreateAccount(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		rig.account, rig.msgType = a, "markdown"
		ids = append(ids, rig.post(t, 1)...)
	}
	rig.run(t, rig.worker(t), ids, 0)
	if left := rig.waiting(t, ids); len(left) != 0 {
		t.Fatalf("%d group posts not sent", len(left))
	}
	var got []string
	for _, d := range rig.sim.Deliveries() {
		got = append(got, d.Platform+" "+d.Group+" @"+strings.Join(d.Mentions, ","))
	}
	want := []string{"wecom ops-core @liwei", "feishu ops-core @liwei"}
	if !slices.Equal(got, want) {
		t.Errorf("group posts %q, want %q", got, want)
	}
}

// A pool without limits still spreads its posts across its robots, and skips a held one.
func TestRobotPoolWithoutLimitsSpreadsAndSkipsHeld(t *testing.T) {
	l, _ := newTestLimiter(t)
	ctx := context.Background()
	seen := map[int]int{}
	for i := range 6 {
		d, err := l.AcquireRobot(ctx, 9, 3, sending.Limits{}, "ops-core", "normal", "m"+strconv.Itoa(i))
		if err != nil || !d.Allowed || d.Admission == nil {
			t.Fatalf("post %d: %+v %v, want admitted with its robot", i, d, err)
		}
		seen[d.Admission.Robot()]++
	}
	if seen[0] != 2 || seen[1] != 2 || seen[2] != 2 {
		t.Errorf("robots chosen %v, want two posts each", seen)
	}
	if err := l.HoldRobot(ctx, 9, 1, time.Minute); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if d, _ := l.AcquireRobot(ctx, 9, 3, sending.Limits{}, "ops-core", "normal", "h"+strconv.Itoa(i)); d.Admission.Robot() == 1 {
			t.Errorf("post %d went through the held robot", i)
		}
	}
}
