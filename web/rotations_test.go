package web_test

import (
	"encoding/json"
	"fmt"
	"herald/duty"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-ical"
)

// apiJSON calls the API with a key and decodes the answer.
func apiJSON(t *testing.T, c *console, key, method, path, body string, out any) int {
	t.Helper()
	var r *strings.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	var resp *http.Response
	var text string
	if r != nil {
		resp, text = c.as("").do(method, path, "application/json", r, map[string]string{"Authorization": "Bearer " + key})
	} else {
		resp, text = c.as("").do(method, path, "", nil, map[string]string{"Authorization": "Bearer " + key})
	}
	if out != nil && resp.StatusCode < 300 && resp.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal([]byte(text), out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, text)
		}
	}
	if resp.StatusCode >= 400 && out != nil {
		_ = json.Unmarshal([]byte(text), out)
	}
	return resp.StatusCode
}

type onDutyAnswer struct {
	ExternalID string `json:"external_id"`
	Source     string `json:"source"`
}

// people renders an on-duty list as "E1001(weekly) E1003(rotation:desk)".
func people(list []onDutyAnswer) string {
	parts := make([]string, len(list))
	for i, p := range list {
		parts[i] = p.ExternalID + "(" + p.Source + ")"
	}
	return strings.Join(parts, " ")
}

type calendarAnswer struct {
	Month string `json:"month"`
	Days  []struct {
		Date     string         `json:"date"`
		Kind     string         `json:"kind"`
		OnDuty   []onDutyAnswer `json:"on_duty"`
		Warnings []string       `json:"warnings"`
	} `json:"days"`
}

type errorAnswer struct {
	Error struct {
		Field string `json:"field"`
	} `json:"error"`
}

func TestRotationsAPIAndCalendar(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	_, admin, err := c.store.Access().CreateAPIKey(ctx, "rota-admin", "admin", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	_, reader, err := c.store.Access().CreateAPIKey(ctx, "rota-read", "read", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	// The weekly roster keeps only Li Wei on Mondays.
	if _, err := c.store.Duty().ReplaceDutyWeek(ctx, duty.Week{1: {c.recipient("E1001").ID}}); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []struct{ body, field string }{
		{`{"name":"x","members":["E2001"],"start":"2026-12-01","turn_days":1,"covers":"workdays"}`, "members[0]"},
		{`{"name":"x","members":["E1001+"],"start":"2026-12-01","turn_days":1,"covers":"workdays"}`, "members[0]"},
		{`{"name":"x","members":["E1001","E9999"],"start":"2026-12-01","turn_days":1,"covers":"workdays"}`, "members[1]"},
		{`{"name":"x","members":[],"start":"2026-12-01","turn_days":1,"covers":"workdays"}`, "members"},
		{`{"name":"x","members":["E1001"],"start":"2026-12-32","turn_days":1,"covers":"workdays"}`, "start"},
		{`{"name":"x","members":["E1001"],"start":"2026-12-01","turn_days":0,"covers":"workdays"}`, "turn_days"},
		{`{"name":"x","members":["E1001"],"start":"2026-12-01","turn_days":1,"covers":"weekdays"}`, "weekdays"},
		{`{"name":"x","members":["E1001"],"start":"2026-12-01","turn_days":1,"covers":"workdays","weekdays":[1]}`, "weekdays"},
		{`{"name":"x","members":["E1001"],"start":"2026-12-01","turn_days":1,"covers":"weekdays","weekdays":[8]}`, "weekdays[0]"},
		{`{"name":"x","members":["E1001"],"start":"2026-12-01","turn_days":1,"covers":"sometimes"}`, "covers"},
		{`{"name":" ","members":["E1001"],"start":"2026-12-01","turn_days":1,"covers":"workdays"}`, "name"},
		{`{"name":"a/b","members":["E1001"],"start":"2026-12-01","turn_days":1,"covers":"workdays"}`, "name"},
	} {
		var e errorAnswer
		if status := apiJSON(t, c, admin, "POST", "/api/v1/duty/rotations", bad.body, &e); status != 422 || e.Error.Field != bad.field {
			t.Errorf("%s: %d naming %q, want 422 naming %q", bad.body, status, e.Error.Field, bad.field)
		}
	}
	if list, _ := c.store.Duty().Rotations(ctx); len(list) != 0 {
		t.Fatalf("refused rotations were stored: %+v", list)
	}

	// 2026-12-01 is a Tuesday. One a workday: Li Wei, then Zhang Min and Chen Jie together.
	desk := `{"name":"desk","members":["E1001","E1003+E1004"],"start":"2026-12-01","turn_days":1,"covers":"workdays"}`
	var spec duty.RotationSpec
	if status := apiJSON(t, c, admin, "POST", "/api/v1/duty/rotations", desk, &spec); status != 201 || spec.Name != "desk" || len(spec.Members) != 2 || spec.Members[1] != "E1003+E1004" {
		t.Fatalf("create: %d %+v", status, spec)
	}
	if a := c.lastAudit("duty.rotation.create"); a.TargetID != "desk" || !strings.Contains(a.ParamMap()["members"], "E1003+E1004") {
		t.Errorf("audit entry %+v", a)
	}
	var e errorAnswer
	if status := apiJSON(t, c, admin, "POST", "/api/v1/duty/rotations", desk, &e); status != 422 || e.Error.Field != "name" {
		t.Errorf("a second rotation of the same name: %d naming %q", status, e.Error.Field)
	}
	// Weekends from 2026-12-05, a week each.
	weekend := `{"name":"weekend","members":["E1002","E1004"],"start":"2026-11-30","turn_days":7,"covers":"weekdays","weekdays":[7,6]}`
	if status := apiJSON(t, c, admin, "POST", "/api/v1/duty/rotations", weekend, &spec); status != 201 || fmt.Sprint(spec.Weekdays) != "[6 7]" {
		t.Fatalf("create weekend: %d %+v", status, spec)
	}
	var list []duty.RotationSpec
	if status := apiJSON(t, c, admin, "GET", "/api/v1/duty/rotations", "", &list); status != 200 || len(list) != 2 || list[0].Name != "desk" {
		t.Errorf("list: %d %+v", status, list)
	}
	if status := apiJSON(t, c, reader, "GET", "/api/v1/duty/rotations", "", nil); status != 403 {
		t.Errorf("a read key lists rotations: %d, want 403", status)
	}
	if status := apiJSON(t, c, admin, "GET", "/api/v1/duty/rotations/nope", "", nil); status != 404 {
		t.Errorf("unknown rotation: %d", status)
	}

	// A day off on Thursday 12-03 (the desk rotation skips it without using a turn) and
	// Saturday 12-12 a make-up workday as a Friday.
	if err := c.store.Duty().SetHolidays(ctx, []duty.Holiday{{Date: "2026-12-03", Kind: duty.HolidayOff, Name: "Closed"},
		{Date: "2026-12-12", Kind: duty.HolidayWorkday, AsWeekday: new(5)}}); err != nil {
		t.Fatal(err)
	}
	var cal calendarAnswer
	if status := apiJSON(t, c, reader, "GET", "/api/v1/duty/calendar?month=2026-12", "", &cal); status != 200 || cal.Month != "2026-12" || len(cal.Days) != 31 {
		t.Fatalf("calendar: %d %s %d days", status, cal.Month, len(cal.Days))
	}
	for date, want := range map[string]string{
		"2026-12-01": "workday E1001(rotation:desk)",
		"2026-12-02": "workday E1003(rotation:desk) E1004(rotation:desk)",
		"2026-12-03": "holiday ",
		"2026-12-04": "workday E1001(rotation:desk)",
		"2026-12-05": "weekend E1002(rotation:weekend)",
		"2026-12-07": "workday E1001(weekly) E1003(rotation:desk) E1004(rotation:desk)",
		// A make-up workday as a Friday is not a weekend day for the weekend rotation.
		"2026-12-12": "makeup_workday E1001(rotation:desk)",
		"2026-12-13": "weekend E1004(rotation:weekend)",
		"2026-12-19": "weekend E1002(rotation:weekend)",
	} {
		day := cal.Days[mustDay(t, date)-1]
		if got := day.Kind + " " + people(day.OnDuty); day.Date != date || got != want {
			t.Errorf("%s: %s %q, want %q", date, day.Date, got, want)
		}
		if len(day.Warnings) != 0 {
			t.Errorf("%s warns %v", date, day.Warnings)
		}
	}

	// Renamed to a week's turn over every day.
	week := `{"name":"front","members":["E1003","E1001"],"start":"2026-12-07","turn_days":7,"covers":"every_day"}`
	if status := apiJSON(t, c, admin, "PUT", "/api/v1/duty/rotations/desk", week, &spec); status != 200 || spec.Name != "front" {
		t.Fatalf("update: %d %+v", status, spec)
	}
	if a := c.lastAudit("duty.rotation.update"); a.TargetID != "desk" || a.ParamMap()["new_name"] != "front" {
		t.Errorf("audit entry %+v", a)
	}
	if status := apiJSON(t, c, admin, "PUT", "/api/v1/duty/rotations/desk", week, nil); status != 404 {
		t.Errorf("update of the old name: %d, want 404", status)
	}
	// Before 12-07 nobody is on duty on workdays: the calendar warns, as intake would log.
	apiJSON(t, c, reader, "GET", "/api/v1/duty/calendar?month=2026-12", "", &cal)
	if d := cal.Days[0]; len(d.OnDuty) != 0 || fmt.Sprint(d.Warnings) != "[DUTY_SCHEDULE_NOT_CONFIGURED]" {
		t.Errorf("12-01 with nobody on duty: %+v", d)
	}
	if d := cal.Days[2]; len(d.Warnings) != 0 {
		t.Errorf("a day off warns: %+v", d)
	}
	if d := cal.Days[14]; people(d.OnDuty) != "E1001(rotation:front)" { // 12-15, the second week
		t.Errorf("12-15: %s", people(d.OnDuty))
	}

	// The month view and the roster of each date agree, for every day of a year with
	// holidays, make-up days, both rotations and an override.
	if err := c.store.Duty().SetOverride(ctx, &duty.DutyOverride{Date: "2026-12-15", RecipientID: c.recipient("E1001").ID, Action: duty.OverrideRemove}); err != nil {
		t.Fatal(err)
	}
	if err := c.store.Duty().SetOverride(ctx, &duty.DutyOverride{Date: "2027-02-06", RecipientID: c.recipient("E1002").ID, Action: duty.OverrideAdd}); err != nil {
		t.Fatal(err)
	}
	for m := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC); m.Year() < 2028 && m.Before(time.Date(2027, 12, 1, 0, 0, 0, 0, time.UTC)); m = m.AddDate(0, 1, 0) {
		month := m.Format("2006-01")
		apiJSON(t, c, reader, "GET", "/api/v1/duty/calendar?month="+month, "", &cal)
		for _, d := range cal.Days {
			var roster struct {
				Date       string         `json:"date"`
				OnDuty     []onDutyAnswer `json:"on_duty"`
				Configured bool           `json:"configured"`
				DayOff     bool           `json:"day_off"`
			}
			apiJSON(t, c, admin, "GET", "/api/v1/duty/roster?date="+d.Date, "", &roster)
			if people(roster.OnDuty) != people(d.OnDuty) || roster.Configured != (len(d.Warnings) == 0) || roster.DayOff != (d.Kind == duty.DayHoliday) {
				t.Errorf("%s: calendar %s %s %v, roster %s configured %v day off %v", d.Date, d.Kind, people(d.OnDuty), d.Warnings,
					people(roster.OnDuty), roster.Configured, roster.DayOff)
			}
		}
	}

	var bad errorAnswer
	if status := apiJSON(t, c, reader, "GET", "/api/v1/duty/calendar?month=2026-13", "", &bad); status != 422 || bad.Error.Field != "month" {
		t.Errorf("bad month: %d naming %q", status, bad.Error.Field)
	}
	if status := apiJSON(t, c, admin, "DELETE", "/api/v1/duty/rotations/front", "", nil); status != 204 {
		t.Errorf("delete: %d", status)
	}
	if status := apiJSON(t, c, admin, "DELETE", "/api/v1/duty/rotations/front", "", nil); status != 404 {
		t.Errorf("delete again: %d", status)
	}
	c.lastAudit("duty.rotation.delete")
}

func mustDay(t *testing.T, date string) int {
	d, err := time.Parse(time.DateOnly, date)
	if err != nil {
		t.Fatal(err)
	}
	return d.Day()
}

func TestRotationsConsole(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	op := c.as(operatorUser)

	resp, body := op.get("/duty")
	wantStatus(t, "duty page", resp, body, http.StatusOK)
	wantContains(t, "duty page without rotations", body, "No rotations", `href="/duty/rotations/new"`, `href="/duty/calendar"`)
	resp, body = c.as(viewerUser).get("/duty")
	wantNotContains(t, "viewer's duty page", body, `href="/duty/rotations/new"`)

	resp, body = op.get("/duty/rotations/new")
	wantStatus(t, "new rotation form", resp, body, http.StatusOK)
	wantContains(t, "new rotation form", body, `name="turn.0.at"`, `id="turn-0-q"`, `value="workdays" selected`)

	form := url.Values{"name": {"desk"}, "turn.0.at": {"1"}, "turn.0.member": {"E1001"}, "turn.1.at": {"1"}, "turn.1.member": {"E1003", "E1004"}, "turn.2.at": {"1"}, "turn.2.member": {"E1002"}, "start": {c.today(0)}, "turn_days": {"x"}, "covers": {"every_day"}}
	resp, body = op.post("/duty/rotations", form)
	wantStatus(t, "bad turn", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "turn_days", "must be 1 to 366 days")
	wantContains(t, "the form keeps its input", body, `data-picked="E1003"`, `data-picked="E1004"`, "Chen Jie (E1004)", `data-picked="E1002"`)

	form.Set("turn_days", "1")
	form.Set("turn.1.member", "E2001")
	resp, body = op.post("/duty/rotations", form)
	wantStatus(t, "branch member", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "members[1]", "E2001 is branch staff, who always receive; only head-office staff have duty")

	form["turn.1.member"] = []string{"E1003", "E1004"}
	resp, body = op.post("/duty/rotations", form)
	wantRedirect(t, "create", resp, body, "/duty")
	r, err := c.store.Duty().RotationByName(t.Context(), "desk")
	if err != nil || len(r.Members) != 3 || len(r.Members[1]) != 2 {
		t.Fatalf("stored rotation %+v, %v", r, err)
	}
	c.lastAudit("duty.rotation.create")
	_, body = op.get("/duty")
	// Starting today over every day, today's turn is Li Wei's.
	wantContains(t, "duty page", body, `data-rotation="desk"`, "Zhang Min (E1003) + Chen Jie (E1004)", `<td class="today">Li Wei (E1001)</td>`)
	// A day of the second turn (Zhang Min and Chen Jie): tomorrow, unless tomorrow is a
	// Wednesday, when the demo's weekly roster has both of them anyway and names itself
	// as their source; then three days later, the same turn on a Saturday.
	turnDay := c.today(1)
	if day, _ := time.ParseInLocation(time.DateOnly, turnDay, c.loc); day.Weekday() == time.Wednesday {
		turnDay = c.today(4)
	}
	_, body = op.get("/duty/roster?date=" + turnDay)
	wantContains(t, "a roster of the second turn says where people come from", body, `data-source="rotation:desk"`, "rotation desk")

	resp, body = op.get("/duty/rotations/desk/edit")
	wantStatus(t, "edit form", resp, body, http.StatusOK)
	wantContains(t, "edit form", body, `name="turn.1.member" value="E1004"`, `name="turn.2.member" value="E1002"`)
	form.Set("covers", "weekdays")
	resp, body = op.post("/duty/rotations/desk/edit", form)
	wantStatus(t, "weekdays without a day", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "weekdays", "choose at least one weekday")
	form["weekdays"] = []string{"6", "7"}
	form.Set("name", "weekend")
	resp, body = op.post("/duty/rotations/desk/edit", form)
	wantRedirect(t, "rename", resp, body, "/duty")
	if r, err := c.store.Duty().RotationByName(t.Context(), "weekend"); err != nil || fmt.Sprint(r.Weekdays) != "[6 7]" {
		t.Fatalf("renamed rotation %+v, %v", r, err)
	}
	resp, body = op.get("/duty/rotations/desk/edit")
	wantStatus(t, "the old name", resp, body, http.StatusNotFound)

	// The month view: a day per cell, the kind of day, a warning where nobody is on duty.
	if err := c.store.Duty().SetHoliday(t.Context(), &duty.Holiday{Date: "2026-12-03", Kind: duty.HolidayOff, Name: "Closed"}); err != nil {
		t.Fatal(err)
	}
	resp, body = c.as(viewerUser).get("/duty/calendar?month=2026-12")
	wantStatus(t, "calendar", resp, body, http.StatusOK)
	wantContains(t, "calendar", body, `data-date="2026-12-01" data-kind="workday"`, `data-date="2026-12-03" data-kind="holiday"`, "Closed",
		`href="/duty/calendar?month=2026-11"`, `href="/duty/calendar?month=2027-01"`, "data-print")
	if n := strings.Count(body, `class="month-day`); n != 31 {
		t.Errorf("%d day cells, want 31", n)
	}
	if n := strings.Count(body, `class="month-pad"`); n != 1 { // 2026-12-01 is a Tuesday
		t.Errorf("%d empty cells before the first, want 1", n)
	}
	resp, body = c.as(viewerUser).get("/duty/calendar?month=nonsense")
	wantRedirect(t, "bad month", resp, body, "/duty/calendar")

	resp, body = op.post("/duty/rotations/weekend/delete", nil)
	wantRedirect(t, "delete", resp, body, "/duty")
	if _, err := c.store.Duty().RotationByName(t.Context(), "weekend"); err == nil {
		t.Error("the rotation is still there")
	}
	c.lastAudit("duty.rotation.delete")
}

func TestDutyFeeds(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	op := c.as(operatorUser)
	li := c.recipient("E1001")
	// Li Wei is on the weekly roster on Mondays, Thursdays and Fridays; take her off
	// the next Monday and put her on duty in ten days.
	monday := time.Now().In(c.loc)
	for duty.Weekday(monday) != 1 {
		monday = monday.AddDate(0, 0, 1)
	}
	if err := c.store.Duty().SetOverride(ctx, &duty.DutyOverride{Date: monday.Format(time.DateOnly), RecipientID: li.ID, Action: duty.OverrideRemove}); err != nil {
		t.Fatal(err)
	}
	extra := monday.AddDate(0, 0, 1) // a Tuesday
	if err := c.store.Duty().SetOverride(ctx, &duty.DutyOverride{Date: extra.Format(time.DateOnly), RecipientID: li.ID, Action: duty.OverrideAdd}); err != nil {
		t.Fatal(err)
	}

	resp, body := c.as(viewerUser).get("/duty/feeds")
	wantStatus(t, "feeds page", resp, body, http.StatusOK)
	wantContains(t, "feeds page", body, `data-person="E1001"`, "no feed")
	wantNotContains(t, "a viewer's feeds page", body, "Make feed")

	feedURL := func(body string) string {
		t.Helper()
		_, rest, ok := strings.Cut(body, `id="feed-url" value="`)
		addr, _, _ := strings.Cut(rest, `"`)
		if !ok || !strings.Contains(addr, "/duty/feed/hf_") || !strings.HasSuffix(addr, ".ics") {
			t.Fatalf("no feed address shown: %q", addr)
		}
		return strings.TrimPrefix(addr, c.url)
	}
	resp, body = op.post(fmt.Sprintf("/duty/feeds/%d", li.ID), nil)
	wantStatus(t, "make feed", resp, body, http.StatusOK)
	first := feedURL(body)
	if a := c.lastAudit("duty.feed.rotate"); a.TargetID != "E1001" || strings.Contains(a.Detail, "hf_") {
		t.Errorf("audit entry %+v", a)
	}
	_, body = op.get("/duty/feeds")
	wantNotContains(t, "the address is shown once", body, first)

	anon := c.as("")
	resp, feed := anon.get(first)
	wantStatus(t, "feed", resp, feed, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/calendar") {
		t.Errorf("content type %q", ct)
	}
	cal, err := ical.NewDecoder(strings.NewReader(feed)).Decode()
	if err != nil {
		t.Fatalf("the feed does not parse: %v\n%s", err, feed)
	}
	days := map[string]string{}
	for _, ev := range cal.Events() {
		start, err := ev.DateTimeStart(c.loc)
		if err != nil {
			t.Fatal(err)
		}
		desc, _ := ev.Props.Text(ical.PropDescription)
		summary, _ := ev.Props.Text(ical.PropSummary)
		if summary != "On duty" {
			t.Errorf("summary %q", summary)
		}
		days[start.Format(time.DateOnly)] = desc
	}
	// Every roster Li Wei is on in the feed's window is an event, and no other day.
	rosters, err := duty.Rosters(ctx, c.store.Duty(), time.Now().In(c.loc).AddDate(0, 0, -31).Format(time.DateOnly),
		time.Now().In(c.loc).AddDate(0, 0, 183).Format(time.DateOnly))
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, r := range rosters {
		if r.OnDuty[li.ID] {
			want++
			if _, ok := days[r.Date]; !ok {
				t.Errorf("%s is missing from the feed", r.Date)
			}
		}
	}
	if len(days) != want || want < 60 {
		t.Errorf("%d events, want %d (about three a week)", len(days), want)
	}
	if _, ok := days[monday.Format(time.DateOnly)]; ok {
		t.Errorf("the Monday she was taken off is in the feed")
	}
	if days[extra.Format(time.DateOnly)] != "override" {
		t.Errorf("the added Tuesday: %q, want described as an override", days[extra.Format(time.DateOnly)])
	}

	// A new address replaces the old one.
	resp, body = op.post(fmt.Sprintf("/duty/feeds/%d", li.ID), nil)
	wantStatus(t, "new address", resp, body, http.StatusOK)
	second := feedURL(body)
	if resp, _ := anon.get(first); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the old address answers %d", resp.StatusCode)
	}
	if resp, _ := anon.get(second); resp.StatusCode != http.StatusOK {
		t.Errorf("the new address answers %d", resp.StatusCode)
	}
	for _, bad := range []string{"/duty/feed/hf_0000.ics", "/duty/feed/" + strings.TrimSuffix(strings.TrimPrefix(second, "/duty/feed/"), ".ics")} {
		if resp, _ := anon.get(bad); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s answers %d", bad, resp.StatusCode)
		}
	}
	resp, body = op.post(fmt.Sprintf("/duty/feeds/%d", c.recipient("E2001").ID), nil)
	wantStatus(t, "a branch person's feed", resp, body, http.StatusUnprocessableEntity)

	resp, body = op.post(fmt.Sprintf("/duty/feeds/%d/delete", li.ID), nil)
	wantRedirect(t, "turn off", resp, body, "/duty/feeds")
	if resp, _ := anon.get(second); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a turned-off feed answers %d", resp.StatusCode)
	}
	c.lastAudit("duty.feed.delete")
}
