package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/alert"
	"herald/channels"
	"herald/dispatch"
	"herald/kernel"
	"herald/models"
	"herald/templates"
)

// digestFixture is the alert fixture (demo data, a clock of the test's own) sending
// notices with a digest.
type digestFixture struct {
	*alertFixture
}

func newDigestFixture(t *testing.T) *digestFixture {
	return &digestFixture{alertFixture: newAlertFixture(t)}
}

// notice sends one notice with a digest to people and returns its messages.
func (f *digestFixture) notice(t *testing.T, d *templates.DigestRequest, subject string, people ...string) []models.Message {
	t.Helper()
	res, err := f.d.Submit(context.Background(), f.noticeRequest(d, subject, people...))
	if err != nil {
		t.Fatal(err)
	}
	return res.Messages
}

func (f *digestFixture) noticeRequest(d *templates.DigestRequest, subject string, people ...string) dispatch.Request {
	return dispatch.Request{Source: "api", Actor: "apikey:intake", APIKeyID: &f.keyID, CallbackKeyID: &f.keyID,
		Platform: "sandbox", Recipients: people, Subject: subject, Text: subject + "\n详情见系统", Digest: d}
}

// fold moves the clock on and folds the groups due then, as the poll would.
func (f *digestFixture) fold(t *testing.T, by time.Duration) int {
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

// message reads a message again.
func (f *digestFixture) message(t *testing.T, id string) *models.Message {
	t.Helper()
	m, err := f.store.MessageByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// digestCounts counts the notices sent with a digest by status.
func (f *digestFixture) digestCounts(t *testing.T) map[models.Status]int {
	t.Helper()
	c, err := f.store.Intake().DigestCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDigestValidation(t *testing.T) {
	t.Parallel()
	f := newDigestFixture(t)
	for _, tt := range []struct {
		name   string
		digest templates.DigestRequest
		field  string
	}{
		{"no key", templates.DigestRequest{Window: "5m", Max: 20}, "digest.key"},
		{"blank key", templates.DigestRequest{Key: "  ", Window: "5m", Max: 20}, "digest.key"},
		{"key too long", templates.DigestRequest{Key: strings.Repeat("键", 129), Window: "5m", Max: 20}, "digest.key"},
		{"window unreadable", templates.DigestRequest{Key: "k", Window: "five minutes", Max: 20}, "digest.window"},
		{"window missing", templates.DigestRequest{Key: "k", Max: 20}, "digest.window"},
		{"window too short", templates.DigestRequest{Key: "k", Window: "9s", Max: 20}, "digest.window"},
		{"window too long", templates.DigestRequest{Key: "k", Window: "24h1s", Max: 20}, "digest.window"},
		{"max too small", templates.DigestRequest{Key: "k", Window: "10s", Max: 1}, "digest.max"},
		{"max too large", templates.DigestRequest{Key: "k", Window: "24h", Max: 501}, "digest.max"},
	} {
		_, err := f.d.Submit(context.Background(), f.noticeRequest(&tt.digest, "x", "E2001"))
		var fe *kernel.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%s: error %v, want one naming %s", tt.name, err, tt.field)
		}
	}
	if n := f.messages(t); n != 0 {
		t.Errorf("%d messages written by refused requests", n)
	}
	// The bounds themselves are accepted.
	for _, d := range []templates.DigestRequest{{Key: "k", Window: "10s", Max: 2}, {Key: "k", Window: "24h", Max: 500}} {
		if _, err := f.d.Submit(context.Background(), f.noticeRequest(&d, "x", "E2001")); err != nil {
			t.Errorf("digest %+v: %v", d, err)
		}
	}
}

func TestDigestFoldsWhenWindowCloses(t *testing.T) {
	t.Parallel()
	f := newDigestFixture(t)
	d := &templates.DigestRequest{Key: "core-banking", Window: "1m", Max: 20}
	var notices []models.Message
	for i := range 3 {
		notices = append(notices, f.notice(t, d, fmt.Sprintf("批量任务 %d 失败", i+1), "E2001")...)
		f.fold(t, 10*time.Second)
	}
	for _, n := range notices {
		m := f.message(t, n.ID)
		if m.Status != models.StatusPending || m.TaskID != "" || m.NextAttemptAt != nil || m.DigestSlot == "" {
			t.Errorf("notice %s waiting: status %s, task %q, next %v, slot %q", m.ID, m.Status, m.TaskID, m.NextAttemptAt, m.DigestSlot)
		}
	}
	// Another key, and another person, wait in groups of their own.
	other := f.notice(t, &templates.DigestRequest{Key: "other", Window: "1m", Max: 20}, "另一件事", "E2001")
	elsewhere := f.notice(t, d, "别人的通知", "E2002")
	// The window opened by the first notice closes 60 s after it: 30 s have passed.
	if n := f.fold(t, 29*time.Second); n != 0 {
		t.Fatalf("%d digests before the window closed", n)
	}
	if n := f.fold(t, 2*time.Second); n != 1 {
		t.Fatalf("%d digests when the window closed, want 1", n)
	}
	first := f.message(t, notices[0].ID)
	if first.DigestMessageID == nil {
		t.Fatal("folded notice has no digest_message_id")
	}
	digest := f.message(t, *first.DigestMessageID)
	for _, n := range notices {
		m := f.message(t, n.ID)
		if m.Status != models.StatusDigested || m.DigestMessageID == nil || *m.DigestMessageID != digest.ID {
			t.Errorf("notice %s: status %s, digest %v; want digested into %s", m.ID, m.Status, m.DigestMessageID, digest.ID)
		}
	}
	want := "• 批量任务 1 失败\n• 批量任务 2 失败\n• 批量任务 3 失败"
	if diff := cmp.Diff(want, digest.Content); diff != "" {
		t.Errorf("digest content (-want +got):\n%s", diff)
	}
	if digest.Subject != "3 条通知" || digest.Status != models.StatusPending || digest.TaskID == "" || digest.RecipientID != first.RecipientID {
		t.Errorf("digest: subject %q, status %s, task %q, recipient %d", digest.Subject, digest.Status, digest.TaskID, digest.RecipientID)
	}
	for _, id := range []string{other[0].ID, elsewhere[0].ID} {
		if m := f.message(t, id); m.Status != models.StatusPending {
			t.Errorf("notice %s of another group: %s, want still pending", id, m.Status)
		}
	}
	// The folded notices each report digested, naming the digest.
	events, err := f.store.Outbox().PendingCallbackEvents(context.Background(), f.keyID, 100)
	if err != nil {
		t.Fatal(err)
	}
	digested := 0
	for _, e := range events {
		if e.Type == models.EventMessageDigested {
			digested++
			if e.DigestMessageID == nil || *e.DigestMessageID != digest.ID || e.Status != "digested" {
				t.Errorf("event %s: digest %v, status %s", e.EventID, e.DigestMessageID, e.Status)
			}
		}
	}
	if digested != 3 {
		t.Errorf("%d message.digested events, want 3", digested)
	}
}

func TestDigestMaxFoldsBeforeTheWindow(t *testing.T) {
	t.Parallel()
	f := newDigestFixture(t)
	d := &templates.DigestRequest{Key: "k", Window: "1h", Max: 3}
	var ids []string
	for i := range 4 {
		ids = append(ids, f.notice(t, d, fmt.Sprintf("通知 %d", i+1), "E2001")[0].ID)
	}
	// The third notice filled the group: folded at once, the clock never moved.
	got := []models.Status{}
	for _, id := range ids {
		got = append(got, f.message(t, id).Status)
	}
	want := []models.Status{models.StatusDigested, models.StatusDigested, models.StatusDigested, models.StatusPending}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
	// The fourth opened a new group, which waits for its own window.
	if n := f.fold(t, 59*time.Minute); n != 0 {
		t.Errorf("%d digests before the second window closed", n)
	}
	if n := f.fold(t, time.Minute); n != 1 {
		t.Errorf("%d digests after the second window closed, want 1", n)
	}
}

// A notice asking a smaller max than the group holds folds the whole group at once, in
// as many digests as it takes, the clock never moving.
func TestDigestSmallerMaxFoldsTheWholeGroup(t *testing.T) {
	t.Parallel()
	f := newDigestFixture(t)
	for i := range 5 {
		f.notice(t, &templates.DigestRequest{Key: "k", Window: "1h", Max: 50}, fmt.Sprintf("通知 %d", i+1), "E2001")
	}
	f.notice(t, &templates.DigestRequest{Key: "k", Window: "1h", Max: 2}, "通知 6", "E2001")
	if diff := cmp.Diff(map[models.Status]int{models.StatusDigested: 6}, f.digestCounts(t)); diff != "" {
		t.Errorf("notices by status (-want +got):\n%s", diff)
	}
	if n := f.fold(t, time.Hour); n != 0 {
		t.Errorf("%d digests when the window closed, want none left to make", n)
	}
}

// A high priority notice, an alert's notices and a batch held for approval never wait
// for a digest.
func TestDigestBypass(t *testing.T) {
	t.Parallel()
	f := newDigestFixture(t)
	d := &templates.DigestRequest{Key: "k", Window: "1m", Max: 20}
	ctx := context.Background()

	high := f.noticeRequest(d, "紧急", "E2001")
	high.Priority = models.PriorityHigh
	res, err := f.d.Submit(ctx, high)
	if err != nil {
		t.Fatal(err)
	}
	if m := f.message(t, res.Messages[0].ID); m.DigestSlot != "" || m.TaskID == "" || m.NextAttemptAt == nil {
		t.Errorf("high priority notice waits: slot %q, task %q", m.DigestSlot, m.TaskID)
	}

	f.policy(t, alert.EscalationPolicy{Name: "core", Steps: []alert.PolicyStep{{Targets: []string{"E2002"}, Wait: "5m"}}})
	alert := f.noticeRequest(d, "核心系统告警", "E2001")
	alert.Ack = &dispatch.AckRequest{Policy: "core"}
	if res, err = f.d.Submit(ctx, alert); err != nil {
		t.Fatal(err)
	}
	for _, n := range res.Messages {
		if m := f.message(t, n.ID); m.DigestSlot != "" || m.AlertID == nil {
			t.Errorf("alert notice waits in a digest: slot %q, alert %v", m.DigestSlot, m.AlertID)
		}
	}

	if err := f.store.Intake().SetApprovalThreshold(ctx, 1, "admin1"); err != nil {
		t.Fatal(err)
	}
	f.d.ForgetThreshold()
	if res, err = f.d.Submit(ctx, f.noticeRequest(d, "大批量", "E2001", "E2002")); err != nil {
		t.Fatal(err)
	}
	if res.Batch.Approval != models.ApprovalAwaiting {
		t.Fatalf("batch approval %q, want awaiting", res.Batch.Approval)
	}
	for _, n := range res.Messages {
		if m := f.message(t, n.ID); m.DigestSlot != "" {
			t.Errorf("notice of a batch awaiting approval waits in a digest: %q", m.DigestSlot)
		}
	}
	if n := f.fold(t, time.Hour); n != 0 {
		t.Errorf("%d digests of notices that bypass them", n)
	}
}

// Notices from concurrent callers, folded by several workers at once while they come:
// every notice is carried by exactly one digest, none is lost, no digest exceeds max.
func TestDigestConcurrentCallersAndWorkers(t *testing.T) {
	t.Parallel()
	f := newDigestFixture(t)
	const (
		callers = 6
		each    = 12
		maxSize = 4
	)
	people := []string{"E2001", "E2002", "E2003"}
	workers := []*dispatch.Dispatcher{f.d}
	for range 2 {
		w, err := dispatch.NewDispatcher(dispatch.Config{Store: f.store, Enqueuer: dispatch.EnqueuerOf(f.d), Location: time.UTC, Now: f.clock, Log: dispatch.LogOf(f.d)})
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
	}
	ctx, stop := context.WithCancel(context.Background())
	var folding sync.WaitGroup
	for _, w := range workers {
		folding.Add(1)
		go func() {
			defer folding.Done()
			for ctx.Err() == nil {
				if _, err := w.FoldDueDigests(ctx, nil); err != nil && ctx.Err() == nil {
					t.Error(err)
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	d := &templates.DigestRequest{Key: "burst", Window: "1m", Max: maxSize}
	var sending sync.WaitGroup
	for c := range callers {
		sending.Add(1)
		go func() {
			defer sending.Done()
			for i := range each {
				if _, err := workers[c%len(workers)].Submit(context.Background(), f.noticeRequest(d, fmt.Sprintf("c%d-%d", c, i), people...)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	sending.Wait()
	stop()
	folding.Wait()
	f.fold(t, time.Minute) // what is left when the windows close
	total := callers * each * len(people)
	if diff := cmp.Diff(map[models.Status]int{models.StatusDigested: total}, f.digestCounts(t)); diff != "" {
		t.Fatalf("notices by status (-want +got):\n%s", diff)
	}
	rows, err := f.store.ListMessages(context.Background(), models.MessageFilter{Status: models.StatusDigested}, nil, total+1)
	if err != nil {
		t.Fatal(err)
	}
	carried := map[string]int{}
	for _, m := range rows {
		carried[*m.DigestMessageID]++
	}
	sum := 0
	for id, n := range carried {
		sum += n
		digest := f.message(t, id)
		lines := strings.Count(digest.Content, "\n") + 1
		if n > maxSize || lines != n || digest.Subject != fmt.Sprintf("%d 条通知", n) {
			t.Errorf("digest %s carries %d notices (max %d), shows %d lines, subject %q", id, n, maxSize, lines, digest.Subject)
		}
	}
	if sum != total {
		t.Errorf("digests carry %d notices, want %d", sum, total)
	}
}

// Groups live in the rows alone: a dispatcher started after the notices came folds them.
func TestDigestOpenGroupSurvivesRestart(t *testing.T) {
	t.Parallel()
	f := newDigestFixture(t)
	d := &templates.DigestRequest{Key: "k", Window: "30s", Max: 50}
	for i := range 5 {
		f.notice(t, d, fmt.Sprintf("重启前 %d", i), "E2001", "E2002")
	}
	restarted, err := dispatch.NewDispatcher(dispatch.Config{Store: f.store, Enqueuer: dispatch.EnqueuerOf(f.d), Location: time.UTC, Now: f.clock, Log: dispatch.LogOf(f.d)})
	if err != nil {
		t.Fatal(err)
	}
	f.d = restarted
	if n := f.fold(t, 30*time.Second); n != 2 {
		t.Errorf("%d digests after the restart, want 2 (one a person)", n)
	}
	if diff := cmp.Diff(map[models.Status]int{models.StatusDigested: 10}, f.digestCounts(t)); diff != "" {
		t.Errorf("notices by status (-want +got):\n%s", diff)
	}
}

// A template's digest applies to sends that name none; a send's own digest wins.
func TestTemplateDefaultDigest(t *testing.T) {
	t.Parallel()
	f := newDigestFixture(t)
	ctx := context.Background()
	_, err := f.d.Templates().CreateTemplate(ctx, f.by, templates.TemplateInput{Name: "batch-failed", Body: "批量任务 {{.job}} 失败",
		Variables: []string{"job"}, Digest: &templates.DigestRequest{Key: "jobs", Window: "2m", Max: 10}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.d.Templates().CreateTemplate(ctx, f.by, templates.TemplateInput{Name: "bad-digest", Body: "x",
		Digest: &templates.DigestRequest{Key: "jobs", Window: "1s", Max: 10}})
	var fe *kernel.FieldError
	if !errors.As(err, &fe) || fe.Field != "digest.window" {
		t.Errorf("template with a 1s window: %v, want an error naming digest.window", err)
	}
	send := func(d *templates.DigestRequest) *models.Message {
		res, err := f.d.Submit(ctx, dispatch.Request{Source: "api", Actor: "apikey:intake", APIKeyID: &f.keyID, Platform: "sandbox",
			Recipients: []string{"E2001"}, Template: "batch-failed", Variables: map[string]string{"job": "日终"}, Digest: d})
		if err != nil {
			t.Fatal(err)
		}
		return f.message(t, res.Messages[0].ID)
	}
	byTemplate := send(nil)
	own := send(&templates.DigestRequest{Key: "mine", Window: "10s", Max: 2})
	if models.DigestKeyOf(byTemplate.DigestSlot) != "jobs" || byTemplate.DigestDueAt == nil || !byTemplate.DigestDueAt.Equal(byTemplate.SendAt.Add(2*time.Minute)) {
		t.Errorf("template's digest: slot %q, due %v", byTemplate.DigestSlot, byTemplate.DigestDueAt)
	}
	if models.DigestKeyOf(own.DigestSlot) != "mine" || own.DigestMax != 2 {
		t.Errorf("send's own digest: slot %q, max %d", own.DigestSlot, own.DigestMax)
	}
}

// A digest of many notices is trimmed to what each platform takes, the rest counted.
func TestDigestTrimmedPerPlatform(t *testing.T) {
	t.Parallel()
	notices := make([]models.Message, 500)
	for i := range notices {
		notices[i] = models.Message{Subject: fmt.Sprintf("核心系统批量任务第 %03d 号在日终处理时失败，请值班人员尽快查看并处理", i)}
	}
	for _, platform := range []string{"wecom", "dingtalk", "feishu", "tianyuan", "email", "webhook"} {
		subject, body := dispatch.RenderDigest(platform, notices)
		limit := channels.Cap(platform)
		size := limit.Len(channels.CountedContent(platform, channels.Message{MsgType: "text", Title: subject, Content: body}))
		if size > limit.Max {
			t.Errorf("%s: digest of %d %s, limit %d", platform, size, limit.Unit, limit.Max)
		}
		lines := strings.Split(body, "\n")
		shown := len(lines)
		rest := 0
		if last := lines[len(lines)-1]; strings.HasPrefix(last, "及另外 ") {
			shown--
			if _, err := fmt.Sscanf(last, "及另外 %d 条", &rest); err != nil {
				t.Fatalf("%s: last line %q", platform, last)
			}
		}
		if shown+rest != len(notices) || subject != "500 条通知" {
			t.Errorf("%s: %d lines shown and %d counted, subject %q; want 500 in all", platform, shown, rest, subject)
		}
		// The limit is used: one more line would not have fitted.
		if rest > 0 {
			more := strings.Join(lines[:shown], "\n") + "\n• " + notices[shown].DigestLine()
			if rest > 1 {
				more += "\n及另外 " + fmt.Sprint(rest-1) + " 条"
			}
			if limit.Len(channels.CountedContent(platform, channels.Message{MsgType: "text", Title: subject, Content: more})) <= limit.Max {
				t.Errorf("%s: trimmed at %d lines although another fitted", platform, shown)
			}
		}
	}
}
