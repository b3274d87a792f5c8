package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"herald/duty"
	"herald/models"
)

func TestComposePage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	op := c.as(operatorUser)
	sandbox, err := c.store.Sending().AccountByName(ctx, "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	account := fmt.Sprint(sandbox.ID)
	id := func(ext string) string { return fmt.Sprint(c.recipient(ext).ID) }
	// Today's roster, whatever weekday today is: E1001 on duty, E1002 off.
	for ext, action := range map[string]string{"E1001": duty.OverrideAdd, "E1002": duty.OverrideRemove} {
		if err := c.store.Duty().SetOverride(ctx, &duty.DutyOverride{Date: c.today(0), RecipientID: c.recipient(ext).ID, Action: action}); err != nil {
			t.Fatal(err)
		}
	}
	batchMessages := func(t *testing.T, location string) map[string]models.BatchMessage {
		t.Helper()
		msgs, err := c.store.MessagesOfBatch(ctx, strings.TrimPrefix(location, "/batches/"), 100)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]models.BatchMessage{}
		for _, m := range msgs {
			out[m.RecipientExternalID] = m
		}
		return out
	}

	t.Run("form offers people, departments, templates and the default account", func(t *testing.T) {
		resp, body := op.get("/compose")
		wantStatus(t, "GET /compose", resp, body, http.StatusOK)
		wantContains(t, "compose form", body, `<option value="`+account+`" selected`, `name="recipient" value="`+id("E1001")+`"`,
			`<span>Li Wei <span class="muted">E1001`, `name="department" value="Operations"`, `name="to_on_duty"`,
			`<option value="task-overdue">template: task-overdue</option>`, `type="datetime-local"`, "Asia/Shanghai")
	})

	t.Run("picking a template swaps in its variables", func(t *testing.T) {
		resp, body := op.getHX("/compose/content?template=task-overdue")
		wantStatus(t, "content partial", resp, body, http.StatusOK)
		wantContains(t, "template content", body, `name="variables.task"`, "Overdue: {{.task}}")
		wantNotContains(t, "template content", body, `name="content.text"`)
		_, body = op.getHX("/compose/content?template=")
		wantContains(t, "free-text content", body, `name="content.text"`, `name="content.subject"`)
	})

	t.Run("who will receive: plan only, nothing written", func(t *testing.T) {
		form := url.Values{"account": {account}, "content.text": {"Ledger 42 is overdue"}, "priority": {"normal"},
			"recipient": {id("E1001"), id("E1002"), id("E2001")}}
		resp, body := op.postHX("/compose/preview", form)
		wantStatus(t, "preview", resp, body, http.StatusOK)
		wantContains(t, "preview", body, `<strong id="preview-count">2</strong>`, `data-receives="E1001"`, `data-receives="E2001"`,
			`data-skipped="E1002"`, "Wang Fang (E1002) — not on duty today", "on Sandbox, now")
		if list, _ := c.store.RecentBatches(ctx, 10); len(list) != 0 {
			t.Fatalf("the preview wrote %d batches", len(list))
		}

		form.Set("content.text", "")
		resp, body = op.postHX("/compose/preview", form)
		wantStatus(t, "preview without text", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "preview", body, "Message: is required when no template is named")
	})

	t.Run("a day off: head office skipped as on holiday, no missing-schedule warning", func(t *testing.T) {
		today := c.today(0)
		if err := c.store.Duty().SetHoliday(ctx, &duty.Holiday{Date: today, Kind: duty.HolidayOff, Name: "Rest"}); err != nil {
			t.Fatal(err)
		}
		defer c.store.Duty().DeleteHoliday(ctx, today)
		// Nobody put on duty for the day: the demo's overrides of today go for the while.
		overrides, err := c.store.Duty().OverridesBetween(ctx, today, today)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range overrides {
			if err := c.store.Duty().DeleteOverride(ctx, o.Date, o.RecipientID); err != nil {
				t.Fatal(err)
			}
			defer c.store.Duty().SetOverride(ctx, &o)
		}
		form := url.Values{"account": {account}, "content.text": {"Ledger 42 is overdue"}, "priority": {"normal"},
			"recipient": {id("E1001"), id("E2001")}}
		_, body := op.postHX("/compose/preview", form)
		wantContains(t, "preview on a day off", body, `<strong id="preview-count">1</strong>`, `data-receives="E2001"`,
			`data-skipped="E1001"`, "Li Wei (E1001) — today is a day off", `class="alert info"`)
		wantNotContains(t, "preview on a day off", body, "Nobody is on duty")
	})

	t.Run("everyone on duty and whole departments", func(t *testing.T) {
		form := url.Values{"account": {account}, "content.text": {"Roll call"}, "priority": {"high"}, "to_on_duty": {"true"}, "department": {"Credit"}}
		_, body := op.postHX("/compose/preview", form)
		for _, p := range []string{"E1001", "E2003"} {
			wantContains(t, "preview", body, `data-receives="`+p+`"`)
		}
		wantNotContains(t, "preview", body, `data-receives="E1002"`, `data-receives="E2001"`)
		resp, body := op.post("/compose", form)
		loc := wantRedirect(t, "send", resp, body, "/batches/")
		msgs := batchMessages(t, loc)
		if len(msgs) < 2 || msgs["E1001"].Priority != "high" || msgs["E2003"].Content != "Roll call" {
			t.Errorf("batch %v", msgs)
		}
		if _, ok := msgs["E1002"]; ok {
			t.Error("E1002 is off duty today but got a message")
		}
		if a := c.lastAudit("batch.create"); a.Actor != operatorUser || a.TargetID != strings.TrimPrefix(loc, "/batches/") || a.IP == "" {
			t.Errorf("audit %+v", a)
		}
	})

	t.Run("template with variables", func(t *testing.T) {
		form := url.Values{"account": {account}, "template": {"task-overdue"}, "priority": {"normal"}, "recipient": {id("E2001")}}
		resp, body := op.post("/compose", form)
		wantStatus(t, "missing variable", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "variables.task", "is required by template task-overdue")
		wantContains(t, "form keeps the template", body, `<option value="task-overdue" selected`, `name="variables.task"`)

		form.Set("variables.task", "Reconcile ledger 42")
		resp, body = op.post("/compose", form)
		loc := wantRedirect(t, "send", resp, body, "/batches/")
		if m := batchMessages(t, loc)["E2001"]; m.Content != "Overdue: Reconcile ledger 42. Please handle it today." || m.Subject != "Task overdue" {
			t.Errorf("rendered %q / %q", m.Subject, m.Content)
		}
	})

	t.Run("send at a time in the console's time zone", func(t *testing.T) {
		at := time.Now().In(c.loc).Add(3 * time.Hour).Truncate(time.Minute)
		form := url.Values{"account": {account}, "content.text": {"Later"}, "priority": {"low"}, "recipient": {id("E2002")},
			"send_at": {at.Format("2006-01-02T15:04")}}
		resp, body := op.post("/compose", form)
		loc := wantRedirect(t, "schedule", resp, body, "/batches/")
		m := batchMessages(t, loc)["E2002"]
		if !m.SendAt.Equal(at) {
			t.Errorf("send_at %v, want %v", m.SendAt, at.UTC())
		}
		_, body = op.get("/messages?recipient=E2002")
		wantContains(t, "message list", body, ">Scheduled<")

		form.Set("send_at", time.Now().In(c.loc).Add(-2*time.Hour).Format("2006-01-02T15:04"))
		resp, body = op.post("/compose", form)
		wantStatus(t, "send in the past", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "send_at", "is more than a minute in the past")
		form.Set("send_at", "tomorrow")
		resp, body = op.post("/compose", form)
		wantStatus(t, "bad time", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "send_at", "must be a date and time")
		wantContains(t, "form keeps input", body, `value="tomorrow"`, "Later</textarea>")
	})

	t.Run("validation beside fields", func(t *testing.T) {
		resp, body := op.post("/compose", url.Values{"account": {account}, "content.text": {"x"}, "priority": {"normal"}})
		wantStatus(t, "nobody", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "recipients", "tick at least one person, a whole department or branch, or Everyone on duty")
		resp, body = op.post("/compose", url.Values{"account": {"999999"}, "content.text": {"x"}, "recipient": {id("E2001")}})
		wantStatus(t, "unknown account", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "account", "is not a known account")
		resp, body = op.post("/compose", url.Values{"account": {account}, "content.text": {"x"}, "recipient": {id("E2001")}, "priority": {"urgent"}})
		wantStatus(t, "bad priority", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "priority", "must be high, normal or low")
		if !regexp.MustCompile(`name="recipient" value="` + id("E2001") + `" checked`).MatchString(body) {
			t.Error("the failed form lost the ticked recipient")
		}
	})
}
