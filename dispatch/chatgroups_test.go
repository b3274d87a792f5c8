package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/channels"
	sandboxsender "herald/channels/sandbox"
	"herald/chatgroups"
	"herald/delivery"
	"herald/dispatch"
	"herald/duty"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
	"herald/sending"
	"herald/simulator"
	"herald/tasks"
)

// groupFixture is the intake with the demo staff and week, the 2026 national calendar,
// a WeCom application's group chat "ops-core" and a DingTalk robot's group "dba", both
// @-ing whoever is on duty. Li Wei (E1001) has a mobile number and no DingTalk id.
type groupFixture struct {
	*writeFixture
	now time.Time
}

func newGroupFixture(t *testing.T) *groupFixture {
	t.Helper()
	ctx := context.Background()
	f := &groupFixture{writeFixture: newWriteFixture(t)}
	dispatch.SetClock(f.d, func() time.Time { return f.now })
	f.now = time.Date(2026, 9, 1, 2, 0, 0, 0, time.UTC)
	_, days, err := duty.ParseHolidayCN(testenv.HolidayCN(t, 2026))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.d.Duty().ImportHolidays(ctx, f.by, duty.NationalHolidays(days, nil), duty.HolidaysFromNational); err != nil {
		t.Fatal(err)
	}
	for _, a := range []*sending.Account{
		{Name: "wecom-app", Platform: "wecom", Enabled: true, MaxAttempts: 3, Config: map[string]string{}},
		{Name: "ding-robot", Platform: channels.DingTalkBot, Enabled: true, MaxAttempts: 3, Config: map[string]string{}},
	} {
		if err := f.store.Sending().CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range []chatgroups.Input{
		{Name: "ops-core", Account: "wecom-app", ChatID: "wrOpsCore", Mention: chatgroups.MentionOnDuty},
		{Name: "dba", Account: "ding-robot", Mention: chatgroups.MentionOnDuty},
	} {
		if _, err := dispatch.ChatGroups(f.d).Create(ctx, f.by, in); err != nil {
			t.Fatal(err)
		}
	}
	li, err := f.store.Directory().RecipientByExternalID(ctx, "E1001")
	if err != nil {
		t.Fatal(err)
	}
	li.Mobile = "13800000001"
	if _, err := f.d.Directory().UpdateRecipient(ctx, f.by, "E1001", *li); err != nil {
		t.Fatal(err)
	}
	return f
}

// post sends text to the named groups at the fixture's clock, and returns the posts.
func (f *groupFixture) post(t *testing.T, groups, mention []string) []models.Message {
	t.Helper()
	res, err := f.d.Submit(context.Background(), dispatch.Request{Source: "api", Actor: "apikey:intake", APIKeyID: &f.keyID,
		Groups: groups, Mention: mention, Text: "Core banking batch is late"})
	if err != nil {
		t.Fatal(err)
	}
	return res.Messages
}

// mentioned names the people a post @s, with what the platform @s them by.
func mentioned(m models.Message) []string {
	var out []string
	for _, x := range models.MentionsOf(m.Mentions) {
		out = append(out, x.Name+" "+x.UserID+x.Mobile)
	}
	return out
}

func TestGroupPostsMentionWhoeverIsOnDuty(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	for _, tc := range []struct {
		name     string
		at       time.Time
		app, bot []string
		lines    []string
	}{
		// Thursday: Chen Jie and Li Wei.
		{"weekday", time.Date(2026, 10, 8, 2, 0, 0, 0, time.UTC),
			[]string{"Li Wei wx_E1001", "Chen Jie wx_E1004"}, []string{"Li Wei 13800000001"}, []string{"Chen Jie (E1004)"}},
		// 国庆: a day off with nobody on duty; the post says so.
		{"national day", time.Date(2026, 10, 2, 2, 0, 0, 0, time.UTC), nil, nil, []string{"国庆节"}},
		// The make-up Saturday works as a Monday: Li Wei and Wang Fang.
		{"make-up saturday", time.Date(2026, 10, 10, 2, 0, 0, 0, time.UTC),
			[]string{"Li Wei wx_E1001", "Wang Fang wx_E1002"}, []string{"Li Wei 13800000001"}, []string{"Wang Fang (E1002)"}},
	} {
		f.now = tc.at
		posts := f.post(t, []string{"ops-core", "dba"}, nil)
		if len(posts) != 2 {
			t.Fatalf("%s: %d posts, want one per group", tc.name, len(posts))
		}
		app, bot := posts[0], posts[1]
		if app.Address != "wrOpsCore" || bot.Address != "dba" || app.ChatGroupID == nil || bot.ChatGroupID == nil || app.RecipientID != 0 {
			t.Errorf("%s: posts addressed %q and %q", tc.name, app.Address, bot.Address)
		}
		if diff := cmp.Diff(tc.app, mentioned(app)); diff != "" {
			t.Errorf("%s: the app chat's @ (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(tc.bot, mentioned(bot)); diff != "" {
			t.Errorf("%s: the robot's @ (-want +got):\n%s", tc.name, diff)
		}
		// Whoever the robot cannot @ is named in its post's warning; nobody on duty is said.
		for _, line := range tc.lines {
			if !strings.Contains(bot.Content, line) {
				t.Errorf("%s: the robot's post %q does not say %q", tc.name, bot.Content, line)
			}
		}
		if tc.app == nil && !strings.Contains(app.Content, "国庆节") {
			t.Errorf("%s: the app chat's post %q does not say it is a day off", tc.name, app.Content)
		}
	}
}

func TestGroupMentionsAreChecked(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	ctx := context.Background()
	f.now = time.Date(2026, 10, 8, 2, 0, 0, 0, time.UTC)
	before := f.messages(t)
	for _, tc := range []struct {
		name    string
		groups  []string
		mention []string
		field   string
	}{
		{"unknown person", []string{"ops-core"}, []string{"on_duty", "E9999"}, "mention[1]"},
		{"no id the robot @s by", []string{"ops-core", "dba"}, []string{"on_duty", "E1004"}, "mention[1]"},
		{"unknown group", []string{"ops-core", "nope"}, nil, "groups[1]"},
		{"mention without groups", nil, []string{"E1001"}, "mention"},
	} {
		req := dispatch.Request{Source: "api", Actor: "apikey:intake", APIKeyID: &f.keyID, Groups: tc.groups, Mention: tc.mention, Text: "x"}
		if tc.groups == nil {
			req.Platform, req.Recipients = "sandbox", []string{"E2001"}
		}
		_, err := f.d.Submit(ctx, req)
		var fe *kernel.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.field)
		}
	}
	if n := f.messages(t); n != before {
		t.Errorf("refused sends wrote %d messages", n-before)
	}
	// Named people replace the group's setting; a person and the sandbox's message
	// travel beside the posts.
	res, err := f.d.Submit(ctx, dispatch.Request{Source: "api", Actor: "apikey:intake", APIKeyID: &f.keyID, Platform: "sandbox",
		Recipients: []string{"E2001"}, Groups: []string{"dba"}, Mention: []string{"E1001"}, Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 2 || res.Messages[1].ChatGroupID == nil || !slices.Equal(mentioned(res.Messages[1]), []string{"Li Wei 13800000001"}) {
		t.Errorf("messages %+v", res.Messages)
	}
	if res.Messages[1].Platform != channels.DingTalkBot || strings.Contains(res.Messages[1].Content, "⚠") {
		t.Errorf("the post %+v", res.Messages[1])
	}
}

// TestThrottledGroupPostsFold sends eight posts to a chat group whose account takes two
// a minute, through the worker's own path to the simulator: two go out, and each post
// that must wait folds with those already waiting, so one post carries the other six
// ("6 条通知", a line each), due when the limit frees. Every notice is accounted for:
// sent, or folded into the one post still waiting; nothing is sent twice or dropped.
func TestThrottledGroupPostsFold(t *testing.T) {
	t.Parallel()
	f := newSilenceFixture(t)
	ctx := context.Background()
	sim := simulator.New(simulator.Faults{})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	acct := &sending.Account{Name: "wecom-app", Platform: "wecom", Enabled: true, MaxAttempts: 3, AllowPrivateNetwork: true,
		Config: map[string]string{"corp_id": "ww0123", "secret": "s3cret", "agent_id": "1000002", "base_url": srv.URL + "/wecom"},
		Limits: delivery.Limits{PerMinute: 2}}
	if err := f.store.Sending().CreateAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	if _, err := dispatch.ChatGroups(f.d).Create(ctx, user("admin"), chatgroups.Input{Name: "ops", Account: "wecom-app", ChatID: "wrOps"}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 8 {
		res, err := f.d.Submit(ctx, dispatch.Request{Source: "api", Actor: "apikey:zabbix", APIKeyID: &f.keyID, Groups: []string{"ops"},
			Text: fmt.Sprintf("disk full on db%d", i+1)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Messages[0].ID)
	}
	w := groupWorker(t, f.store, f.redis, sim, f.d)
	for _, id := range ids {
		_ = w.ProcessTask(ctx, tasks.NewSendMessageTask(tasks.Single(id, models.PriorityNormal, time.Now(), "")))
	}

	if n := len(sim.Deliveries()); n != 2 {
		t.Errorf("the simulator received %d posts, want the 2 the limit allows", n)
	}
	var carriers []string
	statuses := map[models.Status]int{}
	for _, id := range ids {
		m, err := f.store.MessageByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		statuses[m.Status]++
		if m.Status == models.StatusDigested && !slices.Contains(carriers, *m.DigestMessageID) {
			carriers = append(carriers, *m.DigestMessageID)
		}
	}
	if statuses[models.StatusSent] != 2 || statuses[models.StatusDigested] != 6 || len(carriers) != 1 {
		t.Fatalf("the posts ended %v, carried by %v; want 2 sent and 6 folded into one post", statuses, carriers)
	}
	carrier, err := f.store.MessageByID(ctx, carriers[0])
	if err != nil {
		t.Fatal(err)
	}
	if carrier.Status != models.StatusPending || carrier.ChatGroupID == nil || carrier.Address != "wrOps" || carrier.NextAttemptAt == nil ||
		!carrier.NextAttemptAt.After(time.Now()) {
		t.Errorf("the post carrying the rest: %+v", carrier)
	}
	if !strings.HasPrefix(carrier.Content, "6 条通知") {
		t.Errorf("the folded post reads %q, want it to start with 6 条通知", carrier.Content)
	}
	for i := 3; i <= 8; i++ {
		if line := fmt.Sprintf("disk full on db%d", i); strings.Count(carrier.Content, line) != 1 {
			t.Errorf("the folded post names %q %d times, want once", line, strings.Count(carrier.Content, line))
		}
	}
	// The posts folded on the way (each fold taking the one before) point at the last.
	var waiting, folds int
	if err := f.store.SQL().QueryRow("SELECT COUNT(*) FROM messages WHERE chat_group_id IS NOT NULL AND status = 'pending'").Scan(&waiting); err != nil || waiting != 1 {
		t.Errorf("%d posts still waiting (%v), want the one carrying the rest", waiting, err)
	}
	if err := f.store.SQL().QueryRow("SELECT COUNT(*) FROM messages WHERE digest_message_id = ?", carrier.ID).Scan(&folds); err != nil || folds < 6 {
		t.Errorf("%d messages point at the carrying post (%v)", folds, err)
	}
}

// A post to a DingTalk robot's group through the worker and the simulator: the robot
// receives it with the people on duty @-ed by what DingTalk @s by (Li Wei by his
// mobile number), and the post names the one it cannot @. Then 25 posts in a row: the
// robot never takes more than its 20 a minute, and the 5 it could not take yet are
// folded into one post waiting for the limit; nothing is dropped.
func TestGroupPostsReachTheDingTalkRobotWithinItsLimit(t *testing.T) {
	t.Parallel()
	f := newGroupFixture(t)
	ctx := context.Background()
	f.now = time.Date(2026, 10, 8, 2, 0, 0, 0, time.UTC) // Thursday: Li Wei and Chen Jie
	sim := simulator.New(simulator.Faults{})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	acct := &sending.Account{Name: "ding-sim", Platform: channels.DingTalkBot, Enabled: true, Healthy: true, MaxAttempts: 3,
		AllowPrivateNetwork: true, Config: map[string]string{"webhook_url": srv.URL + "/dingtalk-bot/robot/send?access_token=tok-dba"},
		Limits: delivery.Limits{PerMinute: 20}}
	if err := f.store.Sending().CreateAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	if _, err := dispatch.ChatGroups(f.d).Create(ctx, f.by, chatgroups.Input{Name: "dba-sim", Account: "ding-sim", Mention: chatgroups.MentionOnDuty}); err != nil {
		t.Fatal(err)
	}
	red, err := tasks.ParseRedisURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	w := groupWorker(t, f.store, red, sim, f.d)
	var ids []string
	for i := range 25 {
		for _, m := range f.post(t, []string{"dba-sim"}, nil) {
			ids = append(ids, m.ID)
		}
		if i == 0 {
			_ = w.ProcessTask(ctx, tasks.NewSendMessageTask(tasks.Single(ids[0], models.PriorityNormal, time.Now(), "")))
			got := sim.Deliveries()
			if len(got) != 1 || got[0].Group != "tok-dba" || !slices.Contains(got[0].Mentions, "13800000001") ||
				!strings.Contains(got[0].Content, "Chen Jie (E1004)") {
				t.Fatalf("the robot received %+v", got)
			}
		}
	}
	for _, id := range ids[1:] {
		_ = w.ProcessTask(ctx, tasks.NewSendMessageTask(tasks.Single(id, models.PriorityNormal, time.Now(), "")))
	}
	if n := len(sim.Deliveries()); n != 20 {
		t.Errorf("the robot received %d posts in a minute, want its 20", n)
	}
	statuses := map[models.Status]int{}
	carriers := map[string]bool{}
	for _, id := range ids {
		m, err := f.store.MessageByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		statuses[m.Status]++
		if m.DigestMessageID != nil {
			carriers[*m.DigestMessageID] = true
		}
	}
	if statuses[models.StatusSent] != 20 || statuses[models.StatusDigested] != 5 || len(carriers) != 1 {
		t.Errorf("the 25 posts ended %v in %d folded posts; want 20 sent and 5 folded into one", statuses, len(carriers))
	}
	if stats := sim.Stats(); stats.DroppedSilently["dingtalk_bot"] != 0 {
		t.Errorf("the robot dropped %d posts silently", stats.DroppedSilently["dingtalk_bot"])
	}
}

// groupWorker is a worker process's sender on store and red, sending to sim, folding
// throttled posts to chat groups through d.
func groupWorker(t *testing.T, store *models.Store, red *tasks.Redis, sim *simulator.Simulator, d *dispatch.Dispatcher) *tasks.Sender {
	t.Helper()
	limiter, err := tasks.NewLimiter(tasks.LimiterConfig{Redis: red})
	if err != nil {
		t.Fatal(err)
	}
	enq := tasks.NewEnqueuer(red.Asynq())
	t.Cleanup(func() { enq.Close() })
	w, err := tasks.NewSender(tasks.SenderConfig{Store: store, Channels: channels.NewRegistry(sandboxsender.New(sim)), Enqueuer: enq,
		Limiter: limiter, Location: time.UTC, CallTimeout: 5 * time.Second, Log: slog.New(slog.DiscardHandler),
		FoldThrottled: dispatch.FoldThrottled(d)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}
