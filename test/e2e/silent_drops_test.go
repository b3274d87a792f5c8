package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"herald/audit"
	"herald/directory"
	"herald/dispatch"
	"herald/models"
	"herald/sending"
	"herald/simulator"
)

// silentRig is Herald with a WeCom and a Feishu account on an in-test simulator, which
// keeps both platforms' per-person limits the way they do: past them it answers
// success and delivers nothing.
type silentRig struct {
	*faultRig
	accounts map[string]*sending.Account
}

// newSilentRig starts Herald and the simulator with n people who have a WeCom and a
// Feishu user id. limits nil gives each account what a new account gets: its
// platform's documented limits.
func newSilentRig(t *testing.T, n int, limits *sending.Limits) *silentRig {
	t.Helper()
	sim := simulator.NewWithOptions(simulator.Faults{}, simulator.Options{Seed: 42})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	rig := &silentRig{faultRig: newRigAt(t, testEnv(t), 0, srv.URL), accounts: map[string]*sending.Account{}}
	rig.Sim = sim
	ctx := context.Background()
	list := make([]directory.Recipient, n)
	for i := range list {
		id := fmt.Sprintf("S%03d", i)
		list[i] = directory.Recipient{ExternalID: id, Name: "Silent " + id, OrgType: directory.Branch, Active: true,
			WecomUserid: "wx_" + id, FeishuUserID: "fs_" + id}
		rig.People = append(rig.People, id)
	}
	if _, err := rig.H.App.Store.Directory().UpsertRecipients(ctx, list); err != nil {
		t.Fatal(err)
	}
	for platform, cfg := range map[string]map[string]string{
		"wecom":  {"corp_id": "ww1", "agent_id": "1000002", "secret": "s", "base_url": srv.URL + "/wecom"},
		"feishu": {"app_id": "cli_1", "app_secret": "s", "base_url": srv.URL + "/feishu"},
	} {
		a, err := rig.Dispatch.Sending().SaveAccount(ctx, audit.System("test"), nil, sending.AccountInput{Name: platform + "-main",
			Platform: platform, AllowPrivateNetwork: true, Config: cfg, Limits: limits,
			// The rig chooses its limits on purpose, looser ones included.
			ConfirmAboveDocumented: true})
		if err != nil {
			t.Fatal(err)
		}
		rig.accounts[platform] = a
	}
	return rig
}

// offer submits rounds messages to every person through the platform's account, one
// request a round, and returns their ids.
func (r *silentRig) offer(t *testing.T, platform string, rounds int) []string {
	t.Helper()
	var ids []string
	for i := range rounds {
		res, err := r.Dispatch.Submit(context.Background(), dispatch.Request{Source: "api", Actor: "test",
			Account: r.accounts[platform].Name, Recipients: r.People, Text: fmt.Sprintf("notice %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Messages {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// The silent-drop guard, end to end: a new WeCom or Feishu account starts from its
// platform's documented limits, so three times the per-person limit offered at once
// leaves the excess waiting in Herald rather than sent into the platform's silent
// drop. Herald's limiter runs on Redis's clock, which a test cannot advance, so the
// run lasts a few real seconds: long enough for Feishu's per-second window to turn
// over several times, and for WeCom's per-minute window to be filled and held.
func TestSilentDropGuard(t *testing.T) {
	const people = 2
	rig := newSilentRig(t, people, nil)
	wecom := rig.offer(t, "wecom", 3*30)    // 30 a minute to one member
	feishu := rig.offer(t, "feishu", 3*5*3) // 5 a second to one user, three seconds' worth
	time.Sleep(3500 * time.Millisecond)     // Feishu's window turns over three times
	for platform, ids := range map[string][]string{"wecom": wecom, "feishu": feishu} {
		counts := rig.waitingOrSent(t, platform, ids)
		t.Logf("%s: offered %d, %v", platform, len(ids), counts)
		if counts[models.StatusSent] == 0 || counts[models.StatusSent] == len(ids) {
			t.Errorf("%s: %d of %d sent; want the limit's worth sent and the rest waiting", platform, counts[models.StatusSent], len(ids))
		}
	}
	st := rig.Sim.Stats()
	for _, platform := range []string{"wecom", "feishu"} {
		if n := st.DroppedSilently[platform]; n != 0 {
			t.Errorf("%s dropped %d notices silently: Herald sent past its documented limits", platform, n)
		}
	}
	if got := rig.Sim.Stats().ByPlatform["wecom"]; got != people*30 {
		t.Errorf("WeCom received %d, want %d: 30 a member within the minute", got, people*30)
	}
	// Each notice went to both people at once: grouped calls, each person admitted on
	// their own.
	calls := map[string]bool{}
	for _, d := range rig.Sim.Deliveries() {
		if d.Platform == "wecom" {
			calls[d.ProviderMsgID] = true
		}
	}
	if len(calls) == 0 || len(calls) >= people*30 {
		t.Errorf("WeCom delivered %d notices in %d calls, want fewer calls than deliveries", people*30, len(calls))
	}
}

// Without limits the same offer is sent at once and the simulator drops the excess
// silently, so the guard above can fail.
func TestSilentDropsWithoutLimits(t *testing.T) {
	rig := newSilentRig(t, 1, &sending.Limits{})
	ids := append(rig.offer(t, "wecom", 35), rig.offer(t, "feishu", 8)...)
	deadline := time.Now().Add(time.Minute)
	for rig.statusCountsOf(t, ids)[models.StatusSent] < len(ids) {
		if time.Now().After(deadline) {
			t.Fatalf("not all sent: %v", rig.statusCountsOf(t, ids))
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := rig.Sim.Stats()
	if st.DroppedSilently["wecom"] != 5 || st.DroppedSilently["feishu"] == 0 {
		t.Errorf("dropped silently %v, want wecom 5 and some of feishu's 8 within a second", st.DroppedSilently)
	}
}

// waitingOrSent checks that each message is sent (and in the simulator's record) or
// waiting to be sent, none lost, stopped or failed, and counts them by status.
func (r *silentRig) waitingOrSent(t *testing.T, platform string, ids []string) map[models.Status]int {
	t.Helper()
	var sent []string
	counts := r.statusCountsOf(t, ids, func(m *models.Message) {
		switch m.Status {
		case models.StatusSent:
			sent = append(sent, m.ID)
		case models.StatusPending, models.StatusSending:
		default:
			t.Errorf("%s message %s is %s (%s), want sent or waiting", platform, m.ID, m.Status, m.LastError)
		}
	})
	// The platform's record is read after the statuses: a message is recorded sent only
	// once the platform answered, so one sent meanwhile is in it too. A delivery is found
	// by its person and its call's id: a grouped call's deliveries share a request id.
	delivered := map[string]bool{}
	for _, d := range r.Sim.Deliveries() {
		delivered[d.To+" "+d.ProviderMsgID] = true
	}
	for _, id := range sent {
		m, err := r.H.App.Store.MessageByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !delivered[m.Address+" "+m.ProviderMessageID] {
			t.Errorf("%s message %s is sent but the platform never delivered it", platform, id)
		}
	}
	return counts
}

// statusCountsOf counts the messages by status, handing each to the checks.
func (r *silentRig) statusCountsOf(t *testing.T, ids []string, checks ...func(*models.Message)) map[models.Status]int {
	t.Helper()
	counts := map[models.Status]int{}
	for _, id := range ids {
		m, err := r.H.App.Store.MessageByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		counts[m.Status]++
		for _, check := range checks {
			check(m)
		}
	}
	return counts
}
