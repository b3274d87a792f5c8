package views

import (
	"context"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"herald/i18n"
	"herald/models"
)

// TestMessagePageLinksItsTask checks the message page's Task row in both languages: the
// task id links to its page in Asynqmon, in the queue of the message's priority, and a
// message without a task says so without a link.
func TestMessagePageLinksItsTask(t *testing.T) {
	now := time.Date(2026, 11, 22, 14, 5, 9, 0, time.UTC)
	// The row: its label, then the id (a link) or a dash, up to the row's end.
	taskRow := regexp.MustCompile(`<div data-task><div class="muted">([^<]*)</div>(.*?)</div>`)
	message := func(priority models.Priority, taskID string) *models.BatchMessage {
		return &models.BatchMessage{Message: models.Message{ID: "0190aaaa-0000-7000-8000-000000000001",
			BatchID: "0190bbbb-0000-7000-8000-000000000001", Platform: "sandbox", Priority: priority,
			Status: models.StatusPending, SendAt: now, CreatedAt: now, TaskID: taskID}}
	}
	tests := []struct {
		lang     string
		message  *models.BatchMessage
		label    string
		wantLink string // "" for none
		wantText string
	}{
		{i18n.English, message("high", "0190aaaa-0000-7000-8000-000000000001"), "Task",
			`/monitoring/queues/high/tasks/0190aaaa-0000-7000-8000-000000000001`, "0190aaaa-0000-7000-8000-000000000001"},
		{i18n.Chinese, message("low", "0190bbbb-0000-7000-8000-000000000001.2"), "队列任务",
			`/monitoring/queues/low/tasks/0190bbbb-0000-7000-8000-000000000001.2`, "0190bbbb-0000-7000-8000-000000000001.2"},
		{i18n.English, message("normal", "0190aaaa:replaces 1/2"), "Task",
			`/monitoring/queues/normal/tasks/0190aaaa:replaces%201%2F2`, "0190aaaa:replaces 1/2"},
		{i18n.English, message("", "m1"), "Task", `/monitoring/queues/normal/tasks/m1`, "m1"},
		{i18n.English, message("normal", ""), "Task", "", "—"},
	}
	for _, tt := range tests {
		ctx := WithLocation(i18n.WithLang(context.Background(), tt.lang), time.UTC)
		var b strings.Builder
		page := MessagePage(Page{Title: "x", Username: "v", Role: "viewer"}, MessageDetail{Message: tt.message, Now: now}, nil)
		if err := page.Render(ctx, &b); err != nil {
			t.Fatal(err)
		}
		row := taskRow.FindStringSubmatch(b.String())
		if row == nil {
			t.Errorf("%s, task %q: no Task row", tt.lang, tt.message.TaskID)
			continue
		}
		value := html.UnescapeString(tagOrComment.ReplaceAllString(row[2], ""))
		if row[1] != tt.label || strings.TrimSpace(value) != tt.wantText {
			t.Errorf("%s, task %q: row %q, %q; want %q, %q", tt.lang, tt.message.TaskID, row[1], value, tt.label, tt.wantText)
		}
		link := regexp.MustCompile(`href="([^"]*)"`).FindStringSubmatch(row[2])
		switch {
		case tt.wantLink == "" && link != nil:
			t.Errorf("%s, no task: links to %s", tt.lang, link[1])
		case tt.wantLink != "" && (link == nil || link[1] != tt.wantLink):
			t.Errorf("%s, task %q: link %v, want %s", tt.lang, tt.message.TaskID, link, tt.wantLink)
		}
	}
}
