package channels

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/simulator"
)

const (
	dingtalkTokenPath  = "/dingtalk/gettoken"
	dingtalkSendPath   = "/dingtalk/topapi/message/corpconversation/asyncsend_v2"
	dingtalkResultPath = "/dingtalk/topapi/message/corpconversation/getsendresult"
)

func dingtalkConfig(rig *simRig) map[string]string {
	return map[string]string{"app_key": "dingkey", "app_secret": "s3cret", "agent_id": "836390886", "base_url": rig.url + "/dingtalk"}
}

func newTestDingTalk(t *testing.T, rig *simRig) *DingTalk {
	t.Helper()
	d, err := NewDingTalk(dingtalkConfig(rig), true)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDingTalkFaults(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	runFaultTable(t, rig, adapterCase{platform: "dingtalk", sender: newTestDingTalk(t, rig), to: "manager0001", providerID: true})
}

// sameContent returns one message per user, sharing their content as a grouped call
// needs.
func sameContent(content string, users ...string) []Message {
	out := make([]Message, len(users))
	for i, u := range users {
		out[i] = Message{ID: fmt.Sprintf("grp-%s-%d", u, i), To: u, MsgType: "markdown", Title: "Overdue", Content: content}
	}
	return out
}

// One call carries many people; getsendresult says who got it. People who already had
// the same content today are held back by DingTalk (answered success, delivered
// nothing): the adapter reports them rate_limited, the others sent, all under one task.
func TestDingTalkGroupOutcomes(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	d := newTestDingTalk(t, rig)
	ctx := context.Background()
	for _, r := range d.SendGroup(ctx, sameContent("ledger 42", "u2", "u4")) {
		if r.Err != nil {
			t.Fatalf("first call: %v", r.Err)
		}
	}
	users := []string{"u1", "u2", "u3", "u4", "u5"}
	results := d.SendGroup(ctx, sameContent("ledger 42", users...))
	if len(results) != len(users) {
		t.Fatalf("%d results for %d messages", len(results), len(users))
	}
	task := results[0].Receipt.ProviderMessageID
	for i, r := range results {
		if r.Receipt.ProviderMessageID != task || task == "" {
			t.Errorf("%s: receipt %q, want the call's task id %q", users[i], r.Receipt.ProviderMessageID, task)
		}
		held := users[i] == "u2" || users[i] == "u4"
		switch {
		case held && (r.Err == nil || classOf(t, r.Err) != RateLimited):
			t.Errorf("%s had it already: %v, want rate_limited", users[i], r.Err)
		case !held && r.Err != nil:
			t.Errorf("%s: %v, want sent", users[i], r.Err)
		}
	}
	if got := rig.hitCount(dingtalkSendPath); got != 2 {
		t.Errorf("asyncsend_v2 calls = %d, want 2", got)
	}
	if got := rig.hitCount(dingtalkResultPath); got != 2 {
		t.Errorf("getsendresult calls = %d, want 2", got)
	}
	st := rig.sim.Stats()
	if st.ByPlatform["dingtalk"] != 5 || st.DroppedSilently["dingtalk"] != 2 {
		t.Errorf("delivered %d, dropped silently %d; want 5 and 2", st.ByPlatform["dingtalk"], st.DroppedSilently["dingtalk"])
	}
}

// Unknown user ids do not fail the call: each comes back permanent on its own.
func TestDingTalkInvalidUsers(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	rig.sim.SetFaults(simulator.Faults{RejectRate: 1})
	for _, r := range newTestDingTalk(t, rig).SendGroup(context.Background(), sameContent("x", "a", "b")) {
		if r.Err == nil || classOf(t, r.Err) != Permanent {
			t.Errorf("%v, want permanent", r.Err)
		}
	}
}

// Past 500 notices to one employee in a day DingTalk delivers nothing; the next day it
// delivers again (China's day, on the simulator's clock).
func TestDingTalkPerEmployeeDay(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	rig := startSim(t, simulator.Options{Now: clock.Now})
	d := newTestDingTalk(t, rig)
	ctx := context.Background()
	for i := range 500 {
		if _, err := d.Send(ctx, Message{ID: strconv.Itoa(i), To: "u1", MsgType: "text", Content: "notice " + strconv.Itoa(i)}); err != nil {
			t.Fatalf("notice %d: %v", i, err)
		}
	}
	_, err := d.Send(ctx, Message{ID: "501", To: "u1", MsgType: "text", Content: "one too many"})
	if err == nil || classOf(t, err) != RateLimited {
		t.Fatalf("501st notice of the day: %v, want rate_limited", err)
	}
	clock.Advance(24 * time.Hour)
	if _, err := d.Send(ctx, Message{ID: "502", To: "u1", MsgType: "text", Content: "one too many"}); err != nil {
		t.Errorf("the next day: %v", err)
	}
	if st := rig.sim.Stats(); st.ByPlatform["dingtalk"] != 501 || st.DroppedSilently["dingtalk"] != 1 {
		t.Errorf("delivered %d, dropped %d; want 501 and 1", st.ByPlatform["dingtalk"], st.DroppedSilently["dingtalk"])
	}
}

// A token DingTalk expired before the adapter's cache did is replaced and the call
// made again; concurrent sends share one token fetch.
func TestDingTalkTokenExpiresMidRun(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	rig := startSim(t, simulator.Options{Now: clock.Now})
	d := newTestDingTalk(t, rig)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := d.Send(ctx, newMessage("user"+strconv.Itoa(i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := rig.hitCount(dingtalkTokenPath); got != 1 {
		t.Errorf("gettoken calls = %d, want 1", got)
	}
	clock.Advance(3 * time.Hour) // past DingTalk's 7200 s, not past the adapter's cache
	if _, err := d.Send(ctx, newMessage("lisi")); err != nil {
		t.Fatalf("send after expiry: %v", err)
	}
	if got := rig.hitCount(dingtalkTokenPath); got != 2 {
		t.Errorf("gettoken calls = %d, want 2", got)
	}
	if got := rig.hitCount(dingtalkSendPath); got != 22 {
		t.Errorf("asyncsend_v2 calls = %d, want 22 (one refused as expired, made again)", got)
	}
}

// A recall takes back the whole task: everyone the call reached.
func TestDingTalkRecall(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	rig := startSim(t, simulator.Options{Now: clock.Now})
	d := newTestDingTalk(t, rig)
	ctx := context.Background()
	ms := sameContent("wrong department", "a", "b", "c")
	results := d.SendGroup(ctx, ms)
	other, err := d.Send(ctx, newMessage("z"))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Recall(ctx, ms[1], results[1].Receipt); err != nil {
		t.Fatalf("Recall: %v", err)
	}
	for _, dl := range rig.sim.Deliveries() {
		if want := dl.To != "z"; dl.Recalled != want {
			t.Errorf("delivery to %s recalled = %v, want %v", dl.To, dl.Recalled, want)
		}
	}
	clock.Advance(25 * time.Hour)
	if err := d.Recall(ctx, Message{ID: "x", To: "z"}, other); err == nil || classOf(t, err) != Permanent {
		t.Errorf("recall after 24 h: %v, want permanent", err)
	}
}

func TestDingTalkBody(t *testing.T) {
	for _, tc := range []struct {
		msg  Message
		want dingtalkMsg
	}{
		{Message{MsgType: "text", Title: "Overdue", Content: "ledger 42"}, dingtalkMsg{MsgType: "text", Text: &dingtalkContent{Content: "Overdue\n\nledger 42"}}},
		{Message{MsgType: "markdown", Title: "Overdue", Content: "**42**"}, dingtalkMsg{MsgType: "markdown", Markdown: &dingtalkContent{Title: "Overdue", Text: "# Overdue\n\n**42**"}}},
		{Message{MsgType: "markdown", Content: "**42** due\nmore"}, dingtalkMsg{MsgType: "markdown", Markdown: &dingtalkContent{Title: "**42** due", Text: "**42** due\nmore"}}},
	} {
		if diff := cmp.Diff(tc.want, dingtalkMessage(tc.msg)); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.msg, diff)
		}
	}
}

func TestDingTalkErrorClasses(t *testing.T) {
	for code, want := range map[int]Class{-1: Transient, 40014: Auth, 42001: Auth, 88: Auth, 40089: Auth,
		90018: RateLimited, 90002: RateLimited, 90099: RateLimited, 40035: Permanent, 60123: Permanent, 12345: Transient} {
		if got := dingtalkErrorAction(code).class; got != want {
			t.Errorf("errcode %d: %s, want %s", code, got, want)
		}
	}
}

// Past 5,000 recipients in a minute DingTalk delivers nothing to the rest of the app's
// calls that minute; the next minute it delivers again.
func TestDingTalkPerAppMinute(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	rig := startSim(t, simulator.Options{Now: clock.Now})
	d := newTestDingTalk(t, rig)
	ctx := context.Background()
	group := func(call int) []GroupResult {
		users := make([]string, DingTalkMaxGroup)
		for i := range users {
			users[i] = fmt.Sprintf("c%d-u%d", call, i)
		}
		return d.SendGroup(ctx, sameContent("minute "+strconv.Itoa(call), users...))
	}
	for call := range 5000 / DingTalkMaxGroup {
		for _, r := range group(call) {
			if r.Err != nil {
				t.Fatalf("call %d: %v", call, r.Err)
			}
		}
	}
	for _, r := range group(-1) {
		if r.Err == nil || classOf(t, r.Err) != RateLimited {
			t.Fatalf("past 5,000 in the minute: %v, want rate_limited", r.Err)
		}
	}
	clock.Advance(time.Minute)
	if r := group(-2)[0]; r.Err != nil {
		t.Errorf("the next minute: %v", r.Err)
	}
	if st := rig.sim.Stats(); st.DroppedSilently["dingtalk"] != DingTalkMaxGroup {
		t.Errorf("dropped silently %d, want %d", st.DroppedSilently["dingtalk"], DingTalkMaxGroup)
	}
}
