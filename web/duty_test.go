package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"herald/audit"
	"herald/duty"
)

func TestDutyPage(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	op := c.as(operatorUser)

	t.Run("viewer reads the roster without edit controls", func(t *testing.T) {
		resp, body := c.as(viewerUser).get("/duty")
		wantStatus(t, "GET /duty", resp, body, http.StatusOK)
		wantContains(t, "duty page", body, "Weekly roster", "Li Wei", "Who is on duty", "Holidays")
		wantNotContains(t, "viewer's duty page", body, `action="/duty/slots"`, "Add an override")
	})

	t.Run("week grid add and remove in place", func(t *testing.T) {
		chen := c.recipient("E1004")
		resp, body := op.postHX("/duty/slots", url.Values{"weekday": {"1"}, "recipient": {"E1004"}})
		wantStatus(t, "add slot", resp, body, http.StatusOK)
		wantContains(t, "grid partial", body, `id="duty-week"`, "Chen Jie")
		wantNotContains(t, "grid partial", body, "<html")
		week, _ := c.store.Duty().DutyWeek(ctx)
		if !slices.Contains(week[1], chen.ID) {
			t.Fatalf("Monday roster %v lacks E1004 after adding", week[1])
		}
		c.lastAudit("duty.slot.add")

		resp, body = op.postHX("/duty/slots/delete", url.Values{"weekday": {"1"}, "recipient": {"E1004"}})
		wantStatus(t, "remove slot", resp, body, http.StatusOK)
		week, _ = c.store.Duty().DutyWeek(ctx)
		if slices.Contains(week[1], chen.ID) {
			t.Fatalf("Monday roster %v still has E1004 after removing", week[1])
		}
	})

	t.Run("branch staff cannot be on a roster: the API's message", func(t *testing.T) {
		resp, body := op.postHX("/duty/slots", url.Values{"weekday": {"1"}, "recipient": {"E2001"}})
		wantStatus(t, "add branch person", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "grid partial", body, "E2001 is branch staff, who always receive; only head-office staff have duty")
	})

	t.Run("override validation and save", func(t *testing.T) {
		resp, body := op.post("/duty/overrides", url.Values{"date": {"2026-13-01"}, "recipient": {"E1003"}, "action": {"add"}, "note": {"cover"}})
		wantStatus(t, "bad date", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "date", "must be a date as YYYY-MM-DD")
		wantContains(t, "form keeps input", body, `value="cover"`, `value="2026-13-01"`)

		resp, body = op.post("/duty/overrides", url.Values{"date": {c.today(3)}, "recipient": {""}, "action": {"add"}})
		wantStatus(t, "no person", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "recipient", "choose a person")

		resp, body = op.post("/duty/overrides", url.Values{"date": {c.today(3)}, "recipient": {"E1003"}, "action": {"add"}, "note": {"cover"}})
		wantRedirect(t, "add override", resp, body, "/duty")
		_, page := op.get("/duty")
		wantContains(t, "duty page", page, c.today(3), "Zhang Min")
		list, _ := c.store.Duty().OverridesBetween(ctx, c.today(3), c.today(3))
		if len(list) != 1 || list[0].Action != duty.OverrideAdd || list[0].Note != "cover" {
			t.Fatalf("overrides on %s: %+v", c.today(3), list)
		}
		if a := c.lastAudit("duty.override.set"); a.Actor != operatorUser || a.TargetID != c.today(3) || a.IP == "" {
			t.Errorf("audit entry %+v", a)
		}

		resp, body = op.post("/duty/overrides/delete", url.Values{"date": {c.today(3)}, "recipient": {"E1003"}})
		wantRedirect(t, "delete override", resp, body, "/duty")
		if list, _ := c.store.Duty().OverridesBetween(ctx, c.today(3), c.today(3)); len(list) != 0 {
			t.Fatalf("override still there: %+v", list)
		}
	})

	t.Run("holiday validation, save, empty-roster warning and roster lookup", func(t *testing.T) {
		date := c.today(2)
		resp, body := op.post("/duty/holidays", url.Values{"date": {date}, "kind": {"workday"}, "name": {"Make-up"}})
		wantStatus(t, "workday without weekday", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "holiday.as_weekday", "a make-up workday needs the weekday (1–7) whose roster it uses")
		wantContains(t, "form keeps input", body, `value="Make-up"`)

		// emptyWarning is the page's list of upcoming workdays with nobody on duty.
		emptyWarning := func(page string) string {
			i := strings.Index(page, `id="duty-empty"`)
			if i < 0 {
				return ""
			}
			w := page[i:]
			return w[:strings.Index(w, "</div>")]
		}
		// A day off is a rest day, not a missing schedule: no warning, the roster says so.
		resp, body = op.post("/duty/holidays", url.Values{"date": {date}, "kind": {"off"}, "name": {"Founders Day"}})
		wantRedirect(t, "save holiday", resp, body, "/duty")
		_, page := op.get("/duty?year=" + date[:4])
		wantContains(t, "duty page", page, "Founders Day")
		if w := emptyWarning(page); strings.Contains(w, date) {
			t.Errorf("the empty-roster warning lists the day off %s:\n%s", date, w)
		}
		resp, body = op.getHX("/duty/roster?date=" + date)
		wantStatus(t, "roster partial", resp, body, http.StatusOK)
		wantContains(t, "roster of the day off", body, `id="roster-day-off"`, "reason holiday", "Founders Day")
		wantNotContains(t, "roster of the day off", body, "Nobody is on duty")

		// A make-up workday whose roster is emptied by overrides is a missing schedule.
		week, err := c.store.Duty().DutyWeek(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range week[1] {
			if err := c.store.Duty().SetOverride(ctx, &duty.DutyOverride{Date: date, RecipientID: id, Action: duty.OverrideRemove}); err != nil {
				t.Fatal(err)
			}
		}
		resp, body = op.post("/duty/holidays", url.Values{"date": {date}, "kind": {"workday"}, "as_weekday": {"1"}, "name": {"Make-up"}})
		wantRedirect(t, "save make-up workday", resp, body, "/duty")
		_, page = op.get("/duty?year=" + date[:4])
		wantContains(t, "duty page", page, `id="duty-empty"`, "DUTY_SCHEDULE_NOT_CONFIGURED")
		if w := emptyWarning(page); !strings.Contains(w, date) {
			t.Errorf("empty-roster warning does not list the make-up workday %s:\n%s", date, w)
		}
		resp, body = op.getHX("/duty/roster?date=" + date)
		wantStatus(t, "roster partial", resp, body, http.StatusOK)
		wantContains(t, "roster of an empty make-up workday", body, "Nobody is on duty")
		resp, body = op.getHX("/duty/roster?date=nope")
		wantStatus(t, "roster of a bad date", resp, body, http.StatusUnprocessableEntity)

		resp, body = op.post("/duty/holidays/delete", url.Values{"date": {date}})
		wantRedirect(t, "delete holiday", resp, body, "/duty")
		if list, _ := c.store.Duty().HolidaysBetween(ctx, date, date); len(list) != 0 {
			t.Fatalf("holiday still there: %+v", list)
		}
	})

	t.Run("viewer cannot edit", func(t *testing.T) {
		resp, body := c.as(viewerUser).post("/duty/overrides", url.Values{"date": {c.today(1)}, "recipient": {"E1001"}, "action": {"add"}})
		wantStatus(t, "viewer adds override", resp, body, http.StatusForbidden)
	})
}

func TestHolidayImport(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := context.Background()
	op := c.as(operatorUser)
	const header = "date,kind,as_weekday,name\n"
	good := header + "2031-10-01,off,,National Day\n2031-10-02,off,,National Day\n2031-10-11,workday,5,Make-up\n"
	bad := header + "2031-10-01,holiday,,X\n2031-02-30,off,,Y\n"
	mixed := header + "2031-10-01,off,,National Day\n2031-10-11,workday,9,Make-up\n2031-10-01,off,,Again\n"
	count := func() int {
		list, err := c.store.Duty().HolidaysBetween(ctx, "2031-01-01", "2031-12-31")
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}

	t.Run("good rows preview, then apply", func(t *testing.T) {
		resp, body := op.upload("/duty/holidays/import", url.Values{"mode": {"preview"}}, good)
		wantStatus(t, "preview", resp, body, http.StatusOK)
		wantContains(t, "preview", body, "All 3 rows are valid", "Apply 3 rows", "National Day")
		if n := count(); n != 0 {
			t.Fatalf("the preview wrote %d holidays", n)
		}
		resp, body = op.post("/duty/holidays/import", url.Values{"mode": {"apply"}, "csv": {good}})
		wantRedirect(t, "apply", resp, body, "/duty?year=2031")
		if n := count(); n != 3 {
			t.Fatalf("after apply: %d holidays, want 3", n)
		}
		c.lastAudit("duty.holidays.import")
	})

	t.Run("bad rows name the line and field", func(t *testing.T) {
		resp, body := op.upload("/duty/holidays/import", url.Values{"mode": {"preview"}}, bad)
		wantStatus(t, "preview", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "preview", body, "2 of 2 rows have errors", "line 2: kind must be off or workday", "line 3: date must be a date as YYYY-MM-DD")
		wantNotContains(t, "preview", body, "Apply ")
	})

	t.Run("mixed rows: apply writes nothing", func(t *testing.T) {
		before := count()
		resp, body := op.post("/duty/holidays/import", url.Values{"mode": {"apply"}, "csv": {mixed}})
		wantStatus(t, "apply", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "preview", body, "2 of 3 rows have errors",
			"line 3: as_weekday a make-up workday needs the weekday (1–7) whose roster it uses",
			"line 4: date 2031-10-01 is also on line 2")
		if n := count(); n != before {
			t.Fatalf("a failed apply changed the holidays: %d, had %d", n, before)
		}
	})

	t.Run("too many rows are refused, naming the field and the limit", func(t *testing.T) {
		rows := func(n int, kind string) string {
			var b strings.Builder
			b.WriteString(header)
			day := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := range n {
				fmt.Fprintf(&b, "%s,%s,,Day %d\n", day.AddDate(0, 0, i).Format(time.DateOnly), kind, i)
			}
			return b.String()
		}
		for _, send := range []func(string) (*http.Response, string){
			func(csv string) (*http.Response, string) {
				return op.upload("/duty/holidays/import", url.Values{"mode": {"preview"}}, csv)
			},
			func(csv string) (*http.Response, string) {
				return op.post("/duty/holidays/import", url.Values{"mode": {"preview"}, "csv": {csv}})
			},
		} {
			resp, body := send(rows(duty.MaxHolidays+1, "off"))
			wantStatus(t, "too many rows", resp, body, http.StatusUnprocessableEntity)
			wantFieldError(t, body, "csv", fmt.Sprintf("has more than %d rows; import at most %d at a time", duty.MaxHolidays, duty.MaxHolidays))
			wantNotContains(t, "refused import", body, "<tbody>")
		}

		// As many as allowed: the preview shows a page of rows and counts the rest.
		resp, body := op.upload("/duty/holidays/import", url.Values{"mode": {"preview"}}, rows(duty.MaxHolidays, "off"))
		wantStatus(t, "large preview", resp, body, http.StatusOK)
		wantContains(t, "large preview", body, fmt.Sprintf("All %d rows are valid", duty.MaxHolidays),
			fmt.Sprintf("Apply %d rows", duty.MaxHolidays), fmt.Sprintf(`id="import-more">Showing 100 of %d rows`, duty.MaxHolidays))
		if n := strings.Count(body, "<tr"); n > 101 {
			t.Errorf("the preview of %d rows renders %d table rows, want at most a page", duty.MaxHolidays, n)
		}
		// With errors, the rows with errors are the ones shown.
		bad := strings.Replace(rows(1500, "off"), "2043-02-", "2043-02-3", 1)
		bad = strings.Replace(bad, ",off,,Day 1499", ",never,,Day 1499", 1)
		resp, body = op.upload("/duty/holidays/import", url.Values{"mode": {"preview"}}, bad)
		wantStatus(t, "large preview with errors", resp, body, http.StatusUnprocessableEntity)
		wantContains(t, "large preview with errors", body, "2 of 1500 rows have errors", "line 1501: kind must be off or workday", `id="import-more">Showing 100 of 1500 rows`)
		if n := strings.Count(body, "<tr"); n > 101 {
			t.Errorf("the preview renders %d table rows, want at most a page", n)
		}
		if n := count(); n != 3 {
			t.Errorf("previews wrote: %d holidays in 2031, want the 3 applied", n)
		}
	})

	t.Run("unknown column", func(t *testing.T) {
		resp, body := op.post("/duty/holidays/import", url.Values{"mode": {"preview"}, "csv": {"day,kind\n2031-01-01,off\n"}})
		wantStatus(t, "preview", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "csv", `line 1: unknown column &#34;day&#34;`)
	})
}

// TestPastOverrideRefused: an override dated before today would be saved and never
// shown (the duty page lists today and later) and never used (that day's roster has
// been used already). The console and the API refuse it alike, naming the date, and
// write nothing.
func TestPastOverrideRefused(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	_, key, err := c.store.Access().CreateAPIKey(ctx, "duty-admin", "admin", adminUser)
	if err != nil {
		t.Fatal(err)
	}
	yesterday := c.today(-1)
	saved := func() int {
		list, err := c.store.Duty().OverridesBetween(ctx, yesterday, yesterday)
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}

	resp, body := c.as(operatorUser).post("/duty/overrides", url.Values{"date": {yesterday}, "recipient": {"E1003"}, "action": {"add"}})
	wantStatus(t, "console: yesterday", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "date", "is before today ("+c.today(0)+")")
	wantContains(t, "the form keeps its input", body, `value="`+yesterday+`"`)

	zh := c.login(operatorUser)
	zh.post("/language", url.Values{"language": {"zh-CN"}, "next": {"/duty"}})
	resp, body = zh.post("/duty/overrides", url.Values{"date": {yesterday}, "recipient": {"E1003"}, "action": {"add"}})
	wantStatus(t, "console in Chinese: yesterday", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "date", "早于今天（"+c.today(0)+"）")

	var answer errorAnswer
	status := apiJSON(t, c, key, "PUT", "/api/v1/duty/overrides", `{"date":"`+yesterday+`","recipient":"E1003","action":"add"}`, &answer)
	if status != http.StatusUnprocessableEntity || answer.Error.Field != "date" {
		t.Errorf("API: yesterday: %d naming %q, want 422 naming date", status, answer.Error.Field)
	}
	if n := saved(); n != 0 {
		t.Errorf("%d past overrides saved", n)
	}
	if list, _ := c.store.AuditLog().List(ctx, audit.Filter{Action: "duty.override.set"}, 10); len(list) != 0 {
		t.Errorf("refused overrides were audited: %+v", list)
	}

	// Today is not the past, from either.
	resp, body = c.as(operatorUser).post("/duty/overrides", url.Values{"date": {c.today(0)}, "recipient": {"E1003"}, "action": {"add"}})
	wantRedirect(t, "console: today", resp, body, "/duty")
	if status := apiJSON(t, c, key, "PUT", "/api/v1/duty/overrides", `{"date":"`+c.today(0)+`","recipient":"E1004","action":"remove"}`, nil); status != http.StatusOK {
		t.Errorf("API: today: %d", status)
	}
	if a := c.lastAudit("duty.override.set"); a.Actor != "apikey:duty-admin" || a.ParamMap()["recipient"] != "E1004" || a.ParamMap()["action"] != "remove" {
		t.Errorf("API entry %+v %v", a, a.ParamMap())
	}
}
