package recall

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/models"
)

// A recall request lapses when the earliest sent message still within its platform's
// window passes it; messages past it already, not sent yet, or on a platform that
// cannot recall do not count, and with none left it lasts a day.
func TestRecallDeadline(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	sent := func(platform string, ago time.Duration) models.Message {
		at := now.Add(-ago)
		return models.Message{Platform: platform, Status: models.StatusSent, SentAt: &at}
	}
	pending := models.Message{Platform: "wecom", Status: models.StatusPending}
	for _, tc := range []struct {
		name    string
		targets []models.Message
		want    time.Time
	}{
		{"nothing sent yet", []models.Message{pending}, now.Add(24 * time.Hour)},
		{"one sent two hours ago", []models.Message{pending, sent("wecom", 2*time.Hour)}, now.Add(22 * time.Hour)},
		{"the earliest of several", []models.Message{sent("feishu", time.Hour), sent("dingtalk", 5*time.Hour), sent("wecom", 3*time.Hour)}, now.Add(19 * time.Hour)},
		{"past the window already", []models.Message{sent("wecom", 25*time.Hour), sent("wecom", 20*time.Hour)}, now.Add(4 * time.Hour)},
		{"a platform that cannot recall", []models.Message{sent("email", 20*time.Hour), sent("wecom", time.Hour)}, now.Add(23 * time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, recallDeadline(tc.targets, now)); diff != "" {
				t.Errorf("deadline (-want +got):\n%s", diff)
			}
		})
	}
}

// A batch recall calls DingTalk once per task and WeCom once per msgid: the messages one
// call carried form one unit; every other message is a unit of its own.
func TestRecallUnits(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	msg := func(id, platform string, account int64, task string, status models.Status) models.Message {
		return models.Message{ID: id, Platform: platform, AccountID: account, ProviderMessageID: task, Status: status, SentAt: &at}
	}
	targets := []models.Message{
		msg("a", "dingtalk", 1, "7", models.StatusSent),
		msg("b", "dingtalk", 1, "8", models.StatusSent),
		msg("c", "dingtalk", 1, "7", models.StatusSent),
		msg("d", "dingtalk", 2, "7", models.StatusSent), // another account's task 7
		msg("e", "dingtalk", 1, "", models.StatusPending),
		msg("f", "wecom", 3, "m1", models.StatusSent),
		msg("g", "wecom", 3, "m1", models.StatusSent), // one WeCom call's msgid
		msg("h", "wecom", 3, "m2", models.StatusSent),
		msg("i", "feishu", 4, "om1", models.StatusSent),
		msg("j", "feishu", 4, "om1", models.StatusSent), // Feishu recalls one message at a time
	}
	var got [][]string
	for _, u := range recallUnits(targets) {
		var ids []string
		for _, m := range u {
			ids = append(ids, m.ID)
		}
		got = append(got, ids)
	}
	want := [][]string{{"a", "c"}, {"b"}, {"d"}, {"e"}, {"f", "g"}, {"h"}, {"i"}, {"j"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
}
