package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/hibiken/asynq"

	"herald/access"
	"herald/directory"
	"herald/internal/testenv"
	"herald/models"
	"herald/tasks"
)

func browserLogin(ctx context.Context, base, user, password string) error {
	return chromedp.Run(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(`#username`, chromedp.ByQuery),
		chromedp.SendKeys(`#username`, user, chromedp.ByQuery),
		chromedp.SendKeys(`#password`, password, chromedp.ByQuery),
		chromedp.Submit(`#password`, chromedp.ByQuery),
		chromedp.WaitVisible(`header.topbar`, chromedp.ByQuery),
	)
}

// waitText polls an element's text until ok accepts it.
func waitText(ctx context.Context, sel string, ok func(string) bool) (string, error) {
	var text string
	for {
		err := chromedp.Run(ctx, chromedp.Text(sel, &text, chromedp.ByQuery, chromedp.NodeVisible))
		if err == nil && ok(strings.TrimSpace(text)) {
			return strings.TrimSpace(text), nil
		}
		select {
		case <-ctx.Done():
			return text, fmt.Errorf("waiting for %s: last text %q: %w", sel, text, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestBrowserComposeBatchAndDashboard drives the console in Chromium: sign in, compose to
// three staff, watch the batch page reach 100 %, and see the dashboard's counts move
// without a reload.
func TestBrowserComposeBatchAndDashboard(t *testing.T) {
	t.Parallel()
	h := startHerald(t, testEnv(t))
	ctx := testenv.Chrome(t)
	if err := browserLogin(ctx, h.URL, "admin", testAdminPassword); err != nil {
		t.Fatalf("log in: %v", err)
	}
	people, err := h.App.Store.Directory().RecipientsByExternalIDs(context.Background(), []string{"E2001", "E2002", "E2003"})
	if err != nil || len(people) != 3 {
		t.Fatalf("demo staff: %v", err)
	}
	actions := []chromedp.Action{
		chromedp.Navigate(h.URL + "/compose"),
		chromedp.WaitVisible(`#text`, chromedp.ByQuery),
	}
	for _, p := range people {
		actions = append(actions, chromedp.Click(fmt.Sprintf(`input[name="recipient"][value="%d"]`, p.ID), chromedp.ByQuery))
	}
	actions = append(actions,
		chromedp.SendKeys(`#text`, "Branch reconciliation is due today", chromedp.ByQuery),
		chromedp.Submit(`#text`, chromedp.ByQuery),
		chromedp.WaitVisible(`#batch-progress`, chromedp.ByQuery),
	)
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("compose: %v", err)
	}
	if _, err := waitText(ctx, `#batch-summary strong`, func(s string) bool { return s == "100.0%" }); err != nil {
		t.Fatalf("batch page never reached 100%%: %v", err)
	}
	var sentBadges int
	if err := chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll('[data-status="sent"]').length`, &sentBadges)); err != nil || sentBadges != 3 {
		t.Errorf("batch page shows %d sent messages (%v), want 3", sentBadges, err)
	}

	// The dashboard updates itself: open it, then send more out of band.
	if err := chromedp.Run(ctx, chromedp.Navigate(h.URL+"/"), chromedp.WaitVisible(`#stat-sent`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	before, err := waitText(ctx, `#stat-sent`, func(s string) bool { n, err := strconv.Atoi(s); return err == nil && n >= 3 })
	if err != nil {
		t.Fatalf("dashboard never counted the first three: %v", err)
	}
	api := newAPIKey(t, h, "send")
	if status, body, _ := api.Call("POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2001","E2002"],"content":{"text":"more"}}`); status != 202 {
		t.Fatalf("send: %d %s", status, body["_raw"])
	}
	was, _ := strconv.Atoi(before)
	after, err := waitText(ctx, `#stat-sent`, func(s string) bool { n, err := strconv.Atoi(s); return err == nil && n >= was+2 })
	if err != nil {
		t.Fatalf("the dashboard did not move without a reload: %v", err)
	}
	t.Logf("dashboard sent count moved from %s to %s without a reload", before, after)
	// HERALD_SCREENSHOT=docs/dashboard.png (from the repository's top) renders the README's picture: the dashboard
	// while a few thousand messages go out.
	if shot := os.Getenv("HERALD_SCREENSHOT"); shot != "" {
		for range 8 {
			api.Call("POST", "/api/v1/messages", `{"platform":"sandbox","recipients":["E2001","E2002","E2003"],"content":{"text":"load"}}`)
		}
		people := make([]directory.Recipient, 300)
		for i := range people {
			id := fmt.Sprintf("L%04d", i)
			people[i] = directory.Recipient{ExternalID: id, Name: id, OrgType: directory.Branch, Active: true}
		}
		if _, err := h.App.Store.Directory().UpsertRecipients(context.Background(), people); err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(people))
		for i, p := range people {
			ids[i] = `"` + p.ExternalID + `"`
		}
		for range 10 {
			api.Call("POST", "/api/v1/messages", `{"platform":"sandbox","priority":"low","recipients":[`+strings.Join(ids, ",")+`],"content":{"text":"load"}}`)
			time.Sleep(300 * time.Millisecond)
		}
		time.Sleep(2500 * time.Millisecond)
		var png []byte
		if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
			t.Fatal(err)
		}
		if !filepath.IsAbs(shot) {
			shot = filepath.Join(repoRoot, shot)
		}
		if err := os.WriteFile(shot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBrowserAsynqmonReadOnlyForViewers opens Asynqmon as a viewer: the page works, and
// no action can be taken from it.
func TestBrowserAsynqmonReadOnlyForViewers(t *testing.T) {
	t.Parallel()
	h := startHerald(t, testEnv(t))
	if _, err := h.App.Store.Access().CreateUser(context.Background(), "vera", "viewer-password-9", access.RoleViewer); err != nil {
		t.Fatal(err)
	}
	// Put a task in Asynq's scheduled set so there is something to act on (scheduled
	// sends wait in Herald's own schedule, which Asynqmon does not show).
	if _, err := h.App.Enqueuer.Client().Enqueue(tasks.NewSendMessageTask(tasks.Job{TaskID: "later", MessageIDs: []string{"later"},
		Priority: models.PriorityNormal, ProcessAt: time.Now().Add(time.Hour)})); err != nil {
		t.Fatal(err)
	}
	ctx := testenv.Chrome(t)
	if err := browserLogin(ctx, h.URL, "vera", "viewer-password-9"); err != nil {
		t.Fatalf("log in: %v", err)
	}
	var title string
	if err := chromedp.Run(ctx,
		chromedp.Navigate(h.URL+"/monitoring/"),
		chromedp.WaitVisible(`#root`, chromedp.ByQuery),
		chromedp.Title(&title),
	); err != nil {
		t.Fatalf("open Asynqmon: %v", err)
	}
	if _, err := waitText(ctx, `#root`, func(s string) bool { return strings.Contains(s, "normal") }); err != nil {
		t.Fatalf("Asynqmon did not list the queues: %v", err)
	}
	// Every action Asynqmon's buttons call is refused for a viewer.
	var statuses []int
	script := `Promise.all([
		fetch('/monitoring/api/queues/normal:pause', {method: 'POST'}),
		fetch('/monitoring/api/queues/normal/scheduled_tasks:batch_delete', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{"task_ids":[]}'}),
		fetch('/monitoring/api/queues/normal', {method: 'DELETE'}),
	]).then(rs => rs.map(r => r.status))`
	if err := chromedp.Run(ctx, chromedp.Evaluate(script, &statuses, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	})); err != nil {
		t.Fatal(err)
	}
	for i, s := range statuses {
		if s != 405 {
			t.Errorf("viewer action %d answered %d, want 405 (read-only)", i, s)
		}
	}
	inspector := asynq.NewInspector(h.App.Redis.Asynq())
	defer inspector.Close()
	if info, err := inspector.GetQueueInfo("normal"); err != nil || info.Paused || info.Scheduled != 1 {
		t.Errorf("normal queue after the viewer's attempts: %+v %v; want unpaused with its scheduled task", info, err)
	}
}
