package channels

import (
	"context"
	"errors"
	"testing"

	"herald/simulator"
)

// A grouped WeCom call: one message/send carries every person; those WeCom does not
// know or who have no licence fail for good with WeCom's code, the others are sent
// with the call's msgid, which a recall then takes back from all of them. A person
// named twice goes in a second call; an alert card and a group post go alone.
func TestWeComSendGroup(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	rig.sim.SetWeComDirectory(simulator.WeComDirectory{Unknown: []string{"ghost"}, Unlicensed: []string{"intern"}})
	w, err := NewWeCom(wecomConfig(rig), true)
	if err != nil {
		t.Fatal(err)
	}
	var _ GroupSender = w
	if w.MaxGroup() != WeComMaxGroup || WeComMaxGroup != 1000 {
		t.Errorf("MaxGroup %d, want 1,000", w.MaxGroup())
	}
	ctx := context.Background()
	const notice = "Overdue: reconcile ledger — 请处理"
	ms := sameContent(notice, "zhangsan", "ghost", "lisi", "intern", "wangwu")
	results := w.SendGroup(ctx, ms)
	if n := rig.hitCount(wecomSendPath); n != 1 {
		t.Errorf("%d message/send calls for five people, want 1", n)
	}
	msgid := results[0].Receipt.ProviderMessageID
	wantCode := map[string]string{"ghost": "invaliduser", "intern": "unlicenseduser"}
	for i, r := range results {
		to := ms[i].To
		if code := wantCode[to]; code != "" {
			var ce *Error
			if !errors.As(r.Err, &ce) || ce.Class != Permanent || ce.Code != code || r.Receipt.ProviderMessageID != "" {
				t.Errorf("%s: %+v, want a permanent %s failure without a receipt", to, r, code)
			}
			continue
		}
		if r.Err != nil || msgid == "" || r.Receipt.ProviderMessageID != msgid {
			t.Errorf("%s: %+v, want sent with the call's msgid %q", to, r, msgid)
		}
	}
	delivered := map[string]bool{}
	for _, d := range rig.sim.Deliveries() {
		delivered[d.To] = d.ProviderMsgID == msgid
	}
	if len(delivered) != 3 || !delivered["zhangsan"] || !delivered["lisi"] || !delivered["wangwu"] {
		t.Errorf("delivered %v, want zhangsan, lisi and wangwu by one call", delivered)
	}
	if err := w.Recall(ctx, ms[0], results[0].Receipt); err != nil {
		t.Fatal(err)
	}
	for _, d := range rig.sim.Deliveries() {
		if !d.Recalled {
			t.Errorf("%s's copy is not recalled: recalling the call takes it back from everyone", d.To)
		}
	}

	// Nobody left: WeCom fails the call (81013), each message with it.
	for i, r := range w.SendGroup(ctx, sameContent(notice, "ghost", "intern")) {
		if c := classOf(t, r.Err); c != Permanent || r.Err.(*Error).Code != "81013" {
			t.Errorf("message %d of a call to nobody: %v, want permanent 81013", i, r.Err)
		}
	}
	// An error of the whole call is each message's.
	rig.sim.SetFaults(simulator.Faults{ThrottleRate: 1})
	for i, r := range w.SendGroup(ctx, sameContent(notice, "zhangsan", "lisi")) {
		if c := classOf(t, r.Err); c != RateLimited {
			t.Errorf("message %d of a throttled call: %v, want rate_limited", i, r.Err)
		}
	}
	rig.sim.SetFaults(simulator.Faults{})

	rig.sim.Reset()
	before := rig.hitCount(wecomSendPath)
	ms = sameContent(notice, "zhangsan", "lisi", "zhangsan", "lisi", "wangwu")
	card := newMessage("wangwu")
	card.Content, card.Actions = notice, AlertActions()
	post := newMessage("chat-1")
	post.Content, post.Group = notice, true
	ms = append(ms, card, post)
	results = w.SendGroup(ctx, ms)
	for i, r := range results {
		if r.Err != nil {
			t.Errorf("message %d (%s): %v", i, ms[i].To, r.Err)
		}
	}
	if n := rig.hitCount(wecomSendPath) - before; n != 3 {
		t.Errorf("%d message/send calls, want 3: the people once each, the repeated two again, the card alone", n)
	}
	if n := rig.hitCount("/wecom/cgi-bin/appchat/send"); n != 1 {
		t.Errorf("%d appchat/send calls, want the group post's 1", n)
	}
	if results[0].Receipt == results[2].Receipt || results[0].Receipt != results[4].Receipt {
		t.Errorf("receipts %v: a person named twice goes in a second call, the others in the first", results)
	}
	cards := 0
	for _, d := range rig.sim.Deliveries() {
		if d.Card != nil {
			cards++
			if d.Card.TaskID != card.ID || d.To != "wangwu" {
				t.Errorf("card to %s with task id %q, want wangwu's with %q", d.To, d.Card.TaskID, card.ID)
			}
		}
	}
	if cards != 1 || len(rig.sim.Deliveries()) != 7 {
		t.Errorf("%d cards in %d deliveries, want 1 in 7", cards, len(rig.sim.Deliveries()))
	}
}
