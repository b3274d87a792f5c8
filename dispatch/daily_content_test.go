package dispatch_test

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"herald/directory"
	"herald/dispatch"
	"herald/internal/testenv"
	"herald/models"
	"herald/sending"
)

// dingtalkFixture is a dispatcher with a DingTalk account and three branch staff with
// DingTalk user ids, in Shanghai time.
func dingtalkFixture(t *testing.T) (*dispatch.Dispatcher, *models.Store, *time.Location) {
	t.Helper()
	ctx := context.Background()
	store := testenv.Store(t)
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	d, err := dispatch.NewDispatcher(dispatch.Config{Store: store, Enqueuer: testenv.Enqueuer(t), Location: shanghai, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := store.Directory().CreateRecipient(ctx, &directory.Recipient{ExternalID: "D" + strconv.Itoa(i), Name: "Staff " + strconv.Itoa(i),
			OrgType: directory.Branch, DingtalkUserid: "ding" + strconv.Itoa(i), Active: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Sending().CreateAccount(ctx, &sending.Account{Name: "dt", Platform: "dingtalk", Enabled: true, Healthy: true,
		Config: map[string]string{"app_key": "k", "app_secret": "s", "agent_id": "1"}}); err != nil {
		t.Fatal(err)
	}
	return d, store, shanghai
}

func dingtalkRequest(text string, sendAt *time.Time, people ...string) dispatch.Request {
	return dispatch.Request{Source: "api", Actor: "test", Account: "dt", Recipients: people, Text: text, SendAt: sendAt}
}

func skippedAsDuplicate(res *dispatch.Result) []string {
	var out []string
	for _, s := range res.Skipped {
		if s.Reason == dispatch.ReasonDuplicateContentToday {
			out = append(out, s.Recipient)
		}
	}
	return out
}

// A second identical notice to one person on one day is skipped; other people, other
// content and the next day (in Herald's time zone) go through.
func TestDuplicateContentToday(t *testing.T) {
	t.Parallel()
	d, _, shanghai := dingtalkFixture(t)
	ctx := context.Background()
	submit := func(req dispatch.Request) *dispatch.Result {
		t.Helper()
		res, err := d.Submit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := submit(dingtalkRequest("Ledger 42 overdue", nil, "D1")); len(res.Messages) != 1 {
		t.Fatalf("first notice: %d messages, want 1", len(res.Messages))
	}
	res := submit(dingtalkRequest("Ledger 42 overdue", nil, "D1", "D2"))
	if got := skippedAsDuplicate(res); len(res.Messages) != 1 || len(got) != 1 || got[0] != "D1" {
		t.Errorf("second notice: %d messages, skipped as duplicate %v; want 1 and [D1]", len(res.Messages), got)
	}
	if res.Batch.SkippedCount != 1 || res.Batch.Accepted != 1 {
		t.Errorf("batch counts accepted %d, skipped %d; want 1 and 1", res.Batch.Accepted, res.Batch.SkippedCount)
	}
	if res := submit(dingtalkRequest("Ledger 43 overdue", nil, "D1")); len(res.Messages) != 1 {
		t.Errorf("other content: %d messages, want 1", len(res.Messages))
	}
	// Tomorrow in Shanghai, whatever the day is in UTC.
	now := time.Now().In(shanghai)
	tomorrow := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 30, 0, 0, shanghai)
	if res := submit(dingtalkRequest("Ledger 42 overdue", &tomorrow, "D1")); len(res.Messages) != 1 {
		t.Errorf("tomorrow: %d messages, want 1", len(res.Messages))
	}
	if res := submit(dingtalkRequest("Ledger 42 overdue", &tomorrow, "D1")); len(res.Messages) != 0 {
		t.Errorf("tomorrow again: %d messages, want 0", len(res.Messages))
	}
}

// Identical notices sent at once (shared or separate transactions): exactly one message
// per person, every other request records them skipped.
func TestDuplicateContentTodayConcurrent(t *testing.T) {
	t.Parallel()
	d, store, _ := dingtalkFixture(t)
	ctx := context.Background()
	const requests = 12
	var mu sync.Mutex
	made, skipped := 0, 0
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() {
			res, err := d.Submit(ctx, dingtalkRequest("Branch audit at 3 pm", nil, "D1", "D2", "D3"))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			made += len(res.Messages)
			skipped += len(skippedAsDuplicate(res))
			mu.Unlock()
		})
	}
	wg.Wait()
	if made != 3 || skipped != 3*(requests-1) {
		t.Errorf("%d messages made, %d skipped as duplicate; want 3 and %d", made, skipped, 3*(requests-1))
	}
	rows, err := store.ListMessages(ctx, models.MessageFilter{}, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Errorf("%d messages stored, want 3", len(rows))
	}
}
