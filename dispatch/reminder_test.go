package dispatch_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"herald/audit"
	"herald/dispatch"
	"herald/duty"
	"herald/kernel"
	"herald/models"
	"herald/templates"
)

func TestDutyReminder(t *testing.T) {
	t.Parallel()
	f := newIntakeFixture(t)
	ctx := context.Background()
	loc, _ := time.LoadLocation("Asia/Shanghai")
	dispatch.SetLocation(f.d, loc)
	now := time.Date(2026, 11, 25, 16, 59, 0, 0, loc) // a Wednesday; Thursday's roster: E1004, E1001
	dispatch.SetClock(f.d, func() time.Time { return now })
	tmpl := &templates.Template{Name: "on-duty", MsgType: "text", Body: "You are on duty on {{.date}}.", Variables: templates.StringList{"date"}}
	if err := f.store.Templates().CreateTemplate(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	bad := &templates.Template{Name: "needs-more", MsgType: "text", Body: "{{.task}}", Variables: templates.StringList{"task"}}
	if err := f.store.Templates().CreateTemplate(ctx, bad); err != nil {
		t.Fatal(err)
	}
	var fe *kernel.FieldError
	if err := dispatch.CheckReminderTemplate(bad); !errors.As(err, &fe) || fe.Field != "template" {
		t.Errorf("a template with a variable a reminder cannot fill: %v", err)
	}
	if err := dispatch.CheckReminderTemplate(tmpl); err != nil {
		t.Errorf("the reminder's template: %v", err)
	}

	// Off: nothing, even past the time.
	if res, err := f.d.RemindIfDue(ctx); res != nil || err != nil {
		t.Fatalf("a reminder that is off sent %+v, %v", res, err)
	}
	cfg := models.ReminderConfig{Enabled: true, Time: "17:00", Account: models.SandboxAccountName, Template: "on-duty"}
	by := audit.Actor{Name: "test", Type: audit.ActorUser, Person: "test"}
	if err := f.d.SetDutyReminder(ctx, by, cfg); err != nil {
		t.Fatal(err)
	}
	for _, wrong := range []struct {
		cfg   models.ReminderConfig
		field string
	}{
		{models.ReminderConfig{Enabled: true, Time: "25:00", Account: models.SandboxAccountName, Template: "on-duty"}, "time"},
		{models.ReminderConfig{Enabled: true, Time: "17:00", Account: "nope", Template: "on-duty"}, "account"},
		{models.ReminderConfig{Enabled: true, Time: "17:00", Account: models.SandboxAccountName, Template: ""}, "template"},
	} {
		if err := f.d.SetDutyReminder(ctx, by, wrong.cfg); !errors.As(err, &fe) || fe.Field != wrong.field {
			t.Errorf("%+v: %v, want an error naming %s", wrong.cfg, err, wrong.field)
		}
	}

	// Before its time: nothing.
	if res, err := f.d.RemindIfDue(ctx); res != nil || err != nil {
		t.Fatalf("a reminder before its time sent %+v, %v", res, err)
	}
	// At its time, from several processes at once: one batch, to Thursday's people,
	// though neither is on duty today (Wednesday: E1003, E1004 — Chen Jie is both).
	now = now.Add(time.Minute)
	var wg sync.WaitGroup
	results := make(chan *dispatch.Result, 4)
	for range 4 {
		wg.Go(func() {
			res, err := f.d.RemindIfDue(ctx)
			if err != nil {
				t.Error(err)
			}
			results <- res
		})
	}
	wg.Wait()
	close(results)
	var sent []*dispatch.Result
	for r := range results {
		if r != nil {
			sent = append(sent, r)
		}
	}
	if len(sent) != 1 {
		t.Fatalf("%d reminder batches, want 1", len(sent))
	}
	res := sent[0]
	var to []string
	for _, m := range res.Messages {
		to = append(to, res.Names[m.RecipientID])
		if !strings.Contains(m.Content, "You are on duty on 2026-11-26.") {
			t.Errorf("content %q", m.Content)
		}
	}
	slices.Sort(to)
	if res.Batch.Source != models.SourceReminder || !slices.Equal(to, []string{"E1001", "E1004"}) || len(res.Skipped) != 0 {
		t.Errorf("reminder batch: source %s, to %v, skipped %v", res.Batch.Source, to, res.Skipped)
	}
	if r, err := f.store.Intake().DutyReminderOf(ctx, "2026-11-26"); err != nil || r == nil || r.BatchID != res.Batch.ID {
		t.Errorf("recorded reminder %+v, %v", r, err)
	}
	if again, err := f.d.RemindIfDue(ctx); again != nil || err != nil {
		t.Errorf("a second reminder of the same date: %+v, %v", again, err)
	}

	// A day with nobody on duty tomorrow is recorded without a batch.
	if _, err := f.store.Duty().ReplaceDutyWeek(ctx, duty.Week{}); err != nil {
		t.Fatal(err)
	}
	now = now.AddDate(0, 0, 1)
	if res, err := f.d.RemindIfDue(ctx); res != nil || err != nil {
		t.Fatalf("nobody on duty: %+v, %v", res, err)
	}
	if r, err := f.store.Intake().DutyReminderOf(ctx, "2026-11-27"); err != nil || r == nil || r.BatchID != "" {
		t.Errorf("recorded empty reminder %+v, %v", r, err)
	}
}
