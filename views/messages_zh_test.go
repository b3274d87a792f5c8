package views

import (
	"context"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/a-h/templ"

	"herald/i18n"
	"herald/models"
)

// dispatchFixtures are a dashboard, a message list, a message page and a batch page with
// every branch that shows words: throttled, scheduled and unknown-outcome messages,
// disabled and unhealthy accounts, usage windows, skipped and rejected people.
func dispatchFixtures(ctx context.Context, now time.Time) map[string]templ.Component {
	at := now.Add(-time.Hour)
	later := now.Add(90 * time.Second)
	sent := now.Add(-time.Minute)
	stopped := models.Message{ID: "0190aaaa-0000-7000-8000-000000000001", BatchID: "0190bbbb-0000-7000-8000-000000000001",
		Platform: "wecom", Address: "liwei", Priority: "high", Status: models.StatusStopped, Attempts: 3, MaxAttempts: 3,
		SendAt: at, ErrorClass: "permanent", LastError: "40001 用户不存在", CreatedAt: at}
	throttled := stopped
	throttled.ID, throttled.Status, throttled.ErrorClass, throttled.NextAttemptAt = "0190aaaa-0000-7000-8000-000000000002",
		models.StatusPending, "throttled", &later
	scheduled := stopped
	scheduled.ID, scheduled.Status, scheduled.ErrorClass, scheduled.SendAt = "0190aaaa-0000-7000-8000-000000000003",
		models.StatusPending, "", now.Add(time.Hour)
	delivered := stopped
	delivered.ID, delivered.Status, delivered.ErrorClass, delivered.LastError, delivered.SentAt = "0190aaaa-0000-7000-8000-000000000004",
		models.StatusSent, "", "", &sent
	rows := []models.BatchMessage{}
	for _, m := range []models.Message{stopped, throttled, scheduled, delivered} {
		rows = append(rows, models.BatchMessage{Message: m, RecipientName: "李伟", RecipientExternalID: "E2001"})
	}
	batch := &models.Batch{ID: stopped.BatchID, Source: "console", Actor: "admin", Platform: "wecom", Priority: "normal",
		SendAt: &at, Requested: 6, Accepted: 4, SkippedCount: 1, RejectedCount: 1, CreatedAt: at,
		Skipped:  models.Reasons{{Recipient: "E1002", Reason: "off_duty"}},
		Rejected: models.Reasons{{Recipient: "E9999", Reason: "unknown_recipient"}}}
	viaAPI := *batch
	viaAPI.Source, viaAPI.Actor = "api", "apikey:erp"
	oldest := now.Add(-75 * time.Second)
	d := Dashboard{Created: 4, Sent: 1, Failed: 2, Stopped: 1, Sending: 1, OldestDue: &oldest, Now: now,
		Queues:      []QueueRow{{Name: "high", Pending: 1, Latency: 1500 * time.Millisecond}, {Name: "normal"}, {Name: "low", Latency: 2 * time.Hour}},
		QueuesError: "redis: nil",
		Chart:       NewChart([]models.MessageStat{{Minute: at.Truncate(time.Minute), Sent: 3}}, at, 60),
		Accounts: []AccountRow{
			{Name: "wecom-main", Platform: "wecom", Enabled: true, Healthy: true, Usage: []UsageRow{{Window: "per_second", Used: 1, Limit: 20}, {Window: "per_day", Used: 20, Limit: 20}}},
			{Name: "ty-main", Platform: "tianyuan", Enabled: true, HealthNote: "401", UsageError: "redis: nil"},
			{Name: "mail", Platform: "email", Enabled: false},
		},
		Failures: []models.RecentFailure{{MessageID: stopped.ID, StartedAt: at, ErrorClass: "permanent", ProviderCode: "40001", Error: "用户不存在"}},
		Batches:  []models.Batch{*batch, viaAPI},
	}
	admin := Page{Title: "x", Username: "admin", Role: "admin"}
	attempts := []models.Attempt{
		{N: 1, StartedAt: at, DurationMs: 12, Outcome: "failed", ErrorClass: "transient", ProviderCode: "500", Error: "502"},
		{N: 2, StartedAt: at, Outcome: models.AttemptUnknown},
		{N: 3, StartedAt: at, Outcome: models.AttemptUnknown},
	}
	view := BatchView{Batch: batch, Messages: rows, Counts: map[models.Status]int{models.StatusSent: 1, models.StatusStopped: 1, models.StatusPending: 2}}
	return map[string]templ.Component{
		"dashboard":       DashboardPage(admin, d),
		"empty dashboard": DashboardLive(Dashboard{Now: now, Chart: NewChart(nil, at, 60)}),
		"message list": MessagesPage(admin, Messages{Rows: rows, Platforms: []string{"wecom", "email", "sandbox"},
			ErrorClasses: []string{"throttled", "rate_limited", "transient", "auth", "permanent"}, Resend: "/messages/resend",
			AccountNames: map[int64]string{}, Filter: MessageFilter{Status: "stopped"}, Next: "/messages?before=x", Now: now},
			map[string]string{"batch": i18n.T(ctx, "messages.filter.bad_batch")}),
		"empty message list": MessagesPage(admin, Messages{Now: now}, nil),
		"no match":           MessagesPage(admin, Messages{Filter: MessageFilter{Platform: "email"}, Now: now}, nil),
		"stopped message":    MessagePage(admin, MessageDetail{Message: &rows[0], Account: "wecom-main", Attempts: attempts, Now: now}, nil),
		"throttled message":  MessagePage(admin, MessageDetail{Message: &rows[1], Account: "wecom-main", Now: now}, nil),
		"batch":              BatchPage(admin, view),
		"empty batch":        BatchProgress(BatchView{Batch: &models.Batch{ID: "b", Accepted: 0}}),
	}
}

var (
	tagOrComment = regexp.MustCompile(`(?s)<!--.*?-->|<script.*?</script>|<[^>]*>`)
	readAttr     = regexp.MustCompile(`(?:title|aria-label|placeholder|data-confirm)="([^"]*)"`)
)

// readable is what a person reads of a page: its text and the attributes shown as text.
func readable(page string) string {
	var b strings.Builder
	for _, m := range readAttr.FindAllStringSubmatch(page, -1) {
		b.WriteString(html.UnescapeString(m[1]) + "\n")
	}
	b.WriteString(html.UnescapeString(tagOrComment.ReplaceAllString(page, "\n")))
	return b.String()
}

// TestDispatchPagesInChinese renders the dashboard, the message list, a message's page
// and a batch's page in Chinese: no lookup fails, and no English text of the catalogs is
// left (texts the Chinese catalogs keep as they are, such as "API", don't count).
func TestDispatchPagesInChinese(t *testing.T) {
	i18n.ResetMissing()
	var zhAll []string
	for _, k := range i18n.Keys(i18n.Chinese) {
		zhAll = append(zhAll, i18n.In(i18n.Chinese, k))
	}
	keptInChinese := func(s string) bool {
		for _, z := range zhAll {
			if strings.Contains(z, s) {
				return true
			}
		}
		return false
	}
	type phrase struct{ key, text string }
	var phrases []phrase
	for _, k := range i18n.Keys(i18n.English) {
		for _, part := range strings.Split(i18n.In(i18n.English, k), "<no value>") {
			part = strings.TrimFunc(part, func(r rune) bool { return !unicode.IsLetter(r) })
			// Words of two or more, or one long word: short ones ("sent") are also data.
			if (strings.Contains(part, " ") || len(part) >= 8) && !keptInChinese(part) {
				phrases = append(phrases, phrase{k, part})
			}
		}
	}
	i18n.ResetMissing() // rendering messages without their data is not a failure

	now := time.Date(2026, 11, 22, 14, 5, 9, 0, time.UTC)
	ctx := WithLocation(i18n.WithLang(context.Background(), i18n.Chinese), time.UTC)
	for name, c := range dispatchFixtures(ctx, now) {
		var b strings.Builder
		if err := c.Render(ctx, &b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := readable(b.String())
		for _, p := range phrases {
			if strings.Contains(text, p.text) {
				t.Errorf("%s shows English %q (%s)", name, p.text, p.key)
			}
		}
		if !strings.ContainsFunc(text, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
			t.Errorf("%s has no Chinese at all", name)
		}
	}
	if m := i18n.Missing(); len(m) > 0 {
		t.Errorf("lookups failed: %s", strings.Join(m, "; "))
	}
}

// TestDispatchPagesSayWhatTheyShow checks the words of the branches in both languages.
// tags matches an HTML tag.
var tags = regexp.MustCompile(`<[^>]+>`)

func TestDispatchPagesSayWhatTheyShow(t *testing.T) {
	now := time.Date(2026, 11, 22, 14, 5, 9, 0, time.UTC)
	want := map[string]map[string][]string{
		i18n.English: {
			"dashboard": {"1.5 s", "2 h 0 min", "1 min 15 s", "per day", "unhealthy", "disabled", "usage unavailable: redis: nil",
				"Redis could not be read: redis: nil", "Permanent", "Console", "API key erp", "Sun 22 Nov 2026 13:05:09", "peak 3/min · 13:05 – 14:04"},
			"stopped message":   {"Outcome unknown for attempts 2, 3", "12 ms", `data-confirm="Send this message again`, "High", "WeCom"},
			"throttled message": {"Throttled until 14:06:39", `data-confirm="Cancel this message?`},
			"message list":      {"Scheduled", "Rate limited", `<option value="stopped" selected>Stopped</option>`},
			"batch":             {"E1002 — not on duty on Sun 22 Nov 2026", "E9999 — not a known recipient", "admin (Console)", "Done:"},
		},
		i18n.Chinese: {
			"dashboard": {"1.5 秒", "2 小时 0 分", "1 分 15 秒", "每天", "异常", "已停用", "无法获取用量：redis: nil",
				"无法读取 Redis：redis: nil", "永久错误", "控制台", "API 密钥 erp", "2026年11月22日 星期日 13:05:09", "峰值 3 条/分钟 · 13:05 – 14:04"},
			"stopped message":   {"第 2、3 次尝试结果未知", "12 毫秒", `data-confirm="重新发送这条消息？`, "企业微信"},
			"throttled message": {"限流中，14:06:39 后重试"},
			"message list":      {"定时发送", "平台限流", `<option value="stopped" selected>已停止</option>`},
			"batch":             {"E1002 — 2026年11月22日 星期日 不值班", "E9999 — 不是已知的接收人", "admin（控制台）", "已完成 <strong>"},
		},
	}
	for lang, pages := range want {
		ctx := WithLocation(i18n.WithLang(context.Background(), lang), time.UTC)
		fixtures := dispatchFixtures(ctx, now)
		for name, wants := range pages {
			var b strings.Builder
			if err := fixtures[name].Render(ctx, &b); err != nil {
				t.Fatalf("%s %s: %v", lang, name, err)
			}
			page := strings.ReplaceAll(b.String(), "&#34;", `"`)
			// A date in a table is two elements (views.When): read its text too.
			text := html.UnescapeString(tags.ReplaceAllString(page, ""))
			for _, w := range wants {
				if !strings.Contains(page, w) && !strings.Contains(html.UnescapeString(page), w) && !strings.Contains(text, w) {
					t.Errorf("%s %s lacks %q", lang, name, w)
				}
			}
		}
	}
}
