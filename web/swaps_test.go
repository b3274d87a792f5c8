package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"herald/duty"
	"herald/models"
	"herald/templates"
)

func TestShiftSwaps(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	op := c.as(operatorUser)
	// The demo week: Monday Li Wei (E1001) and Wang Fang; Wednesday Zhang Min (E1003)
	// and Chen Jie (E1004).
	monday := time.Now().In(c.loc).AddDate(0, 0, 1)
	for duty.Weekday(monday) != 1 {
		monday = monday.AddDate(0, 0, 1)
	}
	mon, wed := monday.Format(time.DateOnly), monday.AddDate(0, 0, 2).Format(time.DateOnly)
	onDuty := func(date string) string {
		t.Helper()
		rosters, err := duty.Rosters(ctx, c.store.Duty(), date, date)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, ext := range []string{"E1001", "E1002", "E1003", "E1004"} {
			if rosters[0].OnDuty[c.recipient(ext).ID] {
				ids = append(ids, ext)
			}
		}
		return strings.Join(ids, " ")
	}
	if got := onDuty(mon) + " / " + onDuty(wed); got != "E1001 E1002 / E1003 E1004" {
		t.Fatalf("before: %s", got)
	}

	resp, body := op.get("/duty/swaps/new")
	wantStatus(t, "swap form", resp, body, http.StatusOK)
	for _, bad := range []struct {
		form           url.Values
		field, message string
	}{
		{url.Values{"a": {"E1004"}, "a_date": {mon}, "b": {"E1003"}, "b_date": {wed}}, "a_date", "Chen Jie is not on duty on " + mon + ", so has no duty to give away"},
		{url.Values{"a": {"E1001"}, "a_date": {mon}, "b": {"E1002"}, "b_date": {wed}}, "b_date", "Wang Fang is not on duty on " + wed + ", so has no duty to give away"},
		{url.Values{"a": {"E1001"}, "a_date": {mon}, "b": {"E1001"}, "b_date": {wed}}, "b", "choose two different people"},
		{url.Values{"a": {"E1001"}, "a_date": {mon}, "b": {"E1002"}, "b_date": {mon}}, "b_date", "the two dates must differ"},
		{url.Values{"a": {"E2001"}, "a_date": {mon}, "b": {"E1003"}, "b_date": {wed}}, "a", "E2001 is branch staff, who always receive; only head-office staff have duty"},
		{url.Values{"a": {""}, "a_date": {mon}, "b": {"E1003"}, "b_date": {wed}}, "a", "choose a person"},
		{url.Values{"a": {"E1001"}, "a_date": {"next monday"}, "b": {"E1003"}, "b_date": {wed}}, "a_date", "must be a date as YYYY-MM-DD"},
	} {
		resp, body := op.post("/duty/swaps", bad.form)
		wantStatus(t, "bad swap", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, bad.field, bad.message)
	}
	if list, _ := c.store.Duty().OverridesBetween(ctx, mon, wed); len(list) != 0 {
		t.Fatalf("refused swaps wrote overrides: %+v", list)
	}

	// Li Wei gives Monday to Zhang Min, who gives Wednesday back.
	resp, body = op.post("/duty/swaps", url.Values{"a": {"E1001"}, "a_date": {mon}, "b": {"E1003"}, "b_date": {wed}, "note": {"dentist"}})
	wantRedirect(t, "swap", resp, body, "/duty")
	if got := onDuty(mon) + " / " + onDuty(wed); got != "E1002 E1003 / E1001 E1004" {
		t.Errorf("after the swap: %s", got)
	}
	list, _ := c.store.Duty().OverridesBetween(ctx, mon, wed)
	if len(list) != 4 || list[0].SwapID == nil {
		t.Fatalf("overrides of the swap: %+v", list)
	}
	id := *list[0].SwapID
	for _, o := range list {
		if o.SwapID == nil || *o.SwapID != id || o.Note != "dentist" {
			t.Errorf("override %+v is not the swap's", o)
		}
	}
	if a := c.lastAudit("duty.swap.create"); a.ParamMap()["a"] != "E1001" || a.ParamMap()["a_date"] != mon ||
		a.ParamMap()["b"] != "E1003" || a.ParamMap()["b_date"] != wed || a.Actor != operatorUser {
		t.Errorf("audit %+v %v", a, a.ParamMap())
	}
	_, body = op.get("/duty")
	label := "Li Wei " + mon + " ↔ Zhang Min " + wed
	undo := fmt.Sprintf(`action="/duty/swaps/%d/delete"`, id)
	if n := strings.Count(body, undo); n != 4 {
		t.Errorf("the duty page offers %d undo buttons for the swap's 4 overrides", n)
	}
	wantContains(t, "duty page", body, label)
	_, body = c.as(viewerUser).get("/duty")
	wantContains(t, "viewer's duty page", body, label)
	wantNotContains(t, "viewer's duty page", body, undo)

	resp, body = op.post(fmt.Sprintf("/duty/swaps/%d/delete", id), nil)
	wantRedirect(t, "undo", resp, body, "/duty")
	if got := onDuty(mon) + " / " + onDuty(wed); got != "E1001 E1002 / E1003 E1004" {
		t.Errorf("after undoing: %s", got)
	}
	if list, _ := c.store.Duty().OverridesBetween(ctx, mon, wed); len(list) != 0 {
		t.Errorf("overrides left after undoing: %+v", list)
	}
	c.lastAudit("duty.swap.delete")
	resp, body = op.post(fmt.Sprintf("/duty/swaps/%d/delete", id), nil)
	wantStatus(t, "undo again", resp, body, http.StatusNotFound)
}

func TestDutyReminderSettings(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	op := c.as(operatorUser)
	_, body := op.get("/duty")
	wantContains(t, "duty page", body, `id="reminder"`, `name="time" value="17:00"`)

	resp, body := op.post("/duty/reminder", url.Values{"enabled": {"1"}, "time": {"7pm"}, "account": {models.SandboxAccountName}, "template": {"task-overdue"}})
	wantStatus(t, "bad template and time", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "template", "the template declares the variable task, which a reminder cannot fill (only date)")
	if err := c.store.Templates().CreateTemplate(t.Context(), &templates.Template{Name: "on-duty", MsgType: "text", Body: "On duty {{.date}}", Variables: templates.StringList{"date"}}); err != nil {
		t.Fatal(err)
	}
	resp, body = op.post("/duty/reminder", url.Values{"enabled": {"1"}, "time": {"7pm"}, "account": {models.SandboxAccountName}, "template": {"on-duty"}})
	wantStatus(t, "bad time", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "time", "must be a time of day as HH:MM")
	wantContains(t, "the form keeps its input", body, `value="7pm"`)

	resp, body = op.post("/duty/reminder", url.Values{"enabled": {"1"}, "time": {"18:30"}, "account": {models.SandboxAccountName}, "template": {"on-duty"}})
	wantRedirect(t, "save", resp, body, "/duty")
	cfg, err := c.store.Intake().DutyReminderConfig(t.Context())
	if err != nil || cfg != (models.ReminderConfig{Enabled: true, Time: "18:30", Account: models.SandboxAccountName, Template: "on-duty"}) {
		t.Fatalf("stored %+v, %v", cfg, err)
	}
	if a := c.lastAudit("duty.reminder.set"); a.ParamMap()["time"] != "18:30" || a.ParamMap()["enabled"] != "on" || a.ParamMap()["before_enabled"] != "off" {
		t.Errorf("audit %+v", a)
	}
	_, body = c.as(viewerUser).get("/duty")
	wantContains(t, "viewer's duty page", body, "Every day at 18:30")
	wantNotContains(t, "viewer's duty page", body, `action="/duty/reminder`)
}
