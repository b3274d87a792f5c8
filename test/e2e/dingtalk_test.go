package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"herald/channels"
	"herald/directory"
	"herald/dispatch"
	"herald/internal/testenv"
	"herald/sending"
	"herald/simulator"
)

// TestDingTalkSilentDropGuard offers one employee three times DingTalk's daily limit of
// work notices in one day, some of them repeating a content already sent. DingTalk would
// answer every call with success and deliver only the first 500, and no repeat; Herald
// must not lose one: its account starts from DingTalk's documented limits, intake skips
// the repeats, and the simulator, which keeps DingTalk's limits, drops nothing. Every
// notice ends sent, skipped as a duplicate, or waiting for tomorrow's capacity.
//
// Herald's limiter runs on Redis's clock, so the days cannot be advanced here: the
// notices past the 500th are checked to wait, not to go out the next day.
func TestDingTalkSilentDropGuard(t *testing.T) {
	env := testEnv(t)
	h := startHerald(t, env)
	ctx := context.Background()
	sim := simulator.NewWithOptions(simulator.Faults{}, simulator.Options{Seed: 7})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)

	documented := channels.DocumentedLimits("dingtalk", nil)
	acct := &sending.Account{Name: "dt-guard", Platform: "dingtalk", Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3, Healthy: true,
		Limits: sending.Limits{PerRecipientPerDay: documented["per_recipient_per_day"], PerMinute: documented["per_minute"]},
		Config: map[string]string{"app_key": "dingkey", "app_secret": "s3cret", "agent_id": "1", "base_url": srv.URL + "/dingtalk"}}
	if err := h.App.Store.Sending().SaveAccount(ctx, acct); err != nil {
		t.Fatal(err)
	}
	if _, err := h.App.Store.Directory().UpsertRecipients(ctx, []directory.Recipient{{ExternalID: "DG1", Name: "Guard", OrgType: directory.Branch,
		DingtalkUserid: "dg1", Active: true}}); err != nil {
		t.Fatal(err)
	}
	const perDay = 500
	offered, distinct := 3*perDay, 3*perDay-100 // the last 100 repeat earlier contents
	// Offered from a few callers at once, as business systems do: the repeats race their
	// originals, and intake's key rows must still let exactly one of each through.
	start := time.Now()
	var mu sync.Mutex
	created, skipped := 0, 0
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < offered; i = int(next.Add(1)) - 1 {
				res, err := h.App.Dispatch.Submit(ctx, dispatch.Request{Source: "api", Actor: "test", Account: acct.Name,
					Recipients: []string{"DG1"}, Text: fmt.Sprintf("Notice %d", i%distinct)})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				created += len(res.Messages)
				for _, s := range res.Skipped {
					if s.Reason == dispatch.ReasonDuplicateContentToday {
						skipped++
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if created != distinct || skipped != offered-distinct {
		t.Fatalf("%d messages created, %d skipped as duplicates; want %d and %d", created, skipped, distinct, offered-distinct)
	}

	t.Logf("intake of %d: %s", offered, time.Since(start))
	// Those past the 500th wait for capacity (throttled), due when the day's window
	// frees: none is lost, none is sent.
	testenv.WaitFor(t, time.Minute, "the day's 500 to go out and the rest to wait for tomorrow", func() bool {
		counts := statusCounts(t, h, acct.ID)
		return counts["sent"] == perDay && counts["pending"]+counts["failed"] == distinct-perDay &&
			waitingForTomorrow(t, h, acct.ID) == distinct-perDay
	})
	t.Logf("all settled: %s", time.Since(start))
	st := sim.Stats()
	if st.DroppedSilently["dingtalk"] != 0 || st.ByPlatform["dingtalk"] != perDay {
		t.Errorf("simulator delivered %d and dropped %d silently; want %d and 0", st.ByPlatform["dingtalk"], st.DroppedSilently["dingtalk"], perDay)
	}
}

// waitingForTomorrow counts an account's messages the limiter holds back for half a day
// or more.
func waitingForTomorrow(t *testing.T, h *running, accountID int64) int {
	t.Helper()
	var n int
	if err := h.App.Store.SQL().QueryRow("SELECT COUNT(*) FROM messages WHERE account_id = ? AND status IN ('pending','failed') AND error_class = 'throttled' AND next_attempt_at > ?",
		accountID, time.Now().UTC().Add(12*time.Hour)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// statusCounts counts an account's messages by status.
func statusCounts(t *testing.T, h *running, accountID int64) map[string]int {
	t.Helper()
	rows, err := h.App.Store.SQL().Query("SELECT status, COUNT(*) FROM messages WHERE account_id = ? GROUP BY status", accountID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			t.Fatal(err)
		}
		out[status] = n
	}
	return out
}
