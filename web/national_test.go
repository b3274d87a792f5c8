package web_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"herald/duty"
	"herald/internal/testenv"
)

// previewEntries returns the entries a national import preview posts back to apply.
func previewEntries(t *testing.T, body string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `<textarea name="entries" hidden>`)
	entries, _, _ := strings.Cut(rest, "</textarea>")
	if !ok || entries == "" {
		t.Fatalf("the preview carries no entries to apply")
	}
	return html.UnescapeString(entries)
}

func TestNationalCalendarImport(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	ctx := t.Context()
	op := c.as(operatorUser)
	year := func(y string) map[string]duty.Holiday {
		list, err := c.store.Duty().HolidaysBetween(ctx, y+"-01-01", y+"-12-31")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]duty.Holiday{}
		for _, h := range list {
			out[h.Date] = h
		}
		return out
	}

	resp, body := op.get("/duty")
	wantContains(t, "duty page", body, `href="/duty/holidays/national"`, "national holiday calendars of 2025, 2026", "No holidays are in force")
	resp, body = op.get("/duty/holidays/national")
	wantStatus(t, "form", resp, body, http.StatusOK)
	wantContains(t, "form", body, `name="builtin" value="2026"`, `name="builtin" value="2025"`)

	// An entry of its own on National Day, which the import will replace.
	if err := c.store.Duty().SetHoliday(ctx, &duty.Holiday{Date: "2026-10-01", Kind: duty.HolidayOff, Name: "Bank holiday"}); err != nil {
		t.Fatal(err)
	}
	resp, body = op.post("/duty/holidays/national", url.Values{"mode": {"preview"}, "builtin": {"2026"}})
	wantStatus(t, "preview 2026", resp, body, http.StatusOK)
	wantContains(t, "preview 2026", body, "Preview of the built-in calendar of 2026: 38 new, 1 changed, 0 unchanged.",
		`data-date="2026-10-01" data-effect="update"`, "replaces: Bank holiday (day off)", `data-date="2026-10-10" data-effect="create"`,
		`name="as_weekday.2026-10-10"`, "gov.cn")
	if n := len(year("2026")); n != 1 {
		t.Fatalf("the preview wrote: %d entries", n)
	}
	resp, body = op.post("/duty/holidays/national", url.Values{"mode": {"apply"}, "entries": {previewEntries(t, body)}, "as_weekday.2026-10-10": {"5"}})
	wantRedirect(t, "apply 2026", resp, body, "/duty?year=2026")
	got := year("2026")
	if len(got) != 39 || got["2026-10-01"].Name != "国庆节" || *got["2026-10-10"].AsWeekday != 5 || *got["2026-01-04"].AsWeekday != duty.DefaultMakeupWeekday ||
		got["2026-02-15"].Kind != duty.HolidayOff {
		t.Fatalf("after apply: %d entries: %+v %+v %+v", len(got), got["2026-10-01"], got["2026-10-10"], got["2026-01-04"])
	}
	if p := c.lastAudit("duty.holidays.import").ParamMap(); p["count"] != "39" || p["new"] != "38" || p["changed"] != "1" || p["source"] != "national" {
		t.Errorf("audit entry params %v", p)
	}
	_, body = op.get("/duty")
	wantContains(t, "duty page after the import", body, "Holidays in force: 2026.")
	// Saturday 2026-10-10 works with Friday's roster (Li Wei, Zhang Min).
	_, body = op.get("/duty/roster?date=2026-10-10")
	wantContains(t, "make-up workday roster", body, "Li Wei", "Zhang Min")
	wantNotContains(t, "make-up workday roster", body, "Wang Fang")

	// A holiday-cn file, uploaded.
	resp, body = op.upload("/duty/holidays/national", url.Values{"mode": {"preview"}}, string(testenv.HolidayCN(t, 2025)))
	wantStatus(t, "preview file", resp, body, http.StatusOK)
	wantContains(t, "preview file", body, "Preview of the holiday-cn file of 2025: 33 new", `data-date="2025-01-26"`)

	// A year no file covers: dates pasted.
	paste := "2027-01-01 off 元旦\n2027-01-02 休 元旦\n2027-01-09 workday"
	resp, body = op.post("/duty/holidays/national", url.Values{"mode": {"preview"}, "text": {paste}})
	wantStatus(t, "preview pasted", resp, body, http.StatusOK)
	wantContains(t, "preview pasted", body, "3 new", `name="as_weekday.2027-01-09"`)
	resp, body = op.post("/duty/holidays/national", url.Values{"mode": {"apply"}, "entries": {previewEntries(t, body)}})
	wantRedirect(t, "apply pasted", resp, body, "/duty?year=2027")
	if got := year("2027"); len(got) != 3 || got["2027-01-02"].Name != "元旦" {
		t.Fatalf("2027 after apply: %+v", got)
	}

	for _, bad := range []struct {
		form    url.Values
		field   string
		message string
	}{
		{url.Values{"text": {"2028-01-01 off\n2028-13-01 off"}}, "text", "Line 2, date: must be a date as YYYY-MM-DD (“2028-13-01 off”)"},
		{url.Values{"text": {"2028-01-01 maybe"}}, "text", "Line 1: the second word must be off or workday (休 or 班) (“2028-01-01 maybe”)"},
		{url.Values{"text": {`{"year":2028,"days":[{"name":"x","date":"2029-01-01","isOffDay":true}]}`}}, "text", "Day 1 of the file, date: must be a date in 2028 (days[0].date)"},
		{url.Values{"builtin": {"1999"}}, "builtin", "Herald does not ship the calendar of that year"},
		{url.Values{"mode": {"apply"}, "entries": {`[{"date":"2028-01-01","name":"","off":true},{"date":"2028-02-30","name":"","off":true}]`}}, "text",
			"Date 2 of the preview, date: must be a date as YYYY-MM-DD (entries[1].date)"},
	} {
		if bad.form.Get("mode") == "" {
			bad.form.Set("mode", "preview")
		}
		resp, body := op.post("/duty/holidays/national", bad.form)
		wantStatus(t, "bad import", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, bad.field, bad.message)
	}
	// A pasted list one date too long is refused, naming the field and the limit.
	var long strings.Builder
	for i := range duty.MaxNationalDays + 1 {
		fmt.Fprintf(&long, "%s off\n", time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format(time.DateOnly))
	}
	resp, body = op.post("/duty/holidays/national", url.Values{"mode": {"preview"}, "text": {long.String()}})
	wantStatus(t, "too many dates", resp, body, http.StatusUnprocessableEntity)
	wantFieldError(t, body, "text", fmt.Sprintf("at most %d dates at once", duty.MaxNationalDays))
	if got := year("2028"); len(got) != 0 {
		t.Errorf("refused imports wrote %+v", got)
	}

	// In Chinese, a problem on a pasted line is a Chinese sentence naming the line, with
	// the line as it was pasted beside it.
	zh := c.login(operatorUser)
	zh.post("/language", url.Values{"language": {"zh-CN"}, "next": {"/duty"}})
	for _, bad := range []struct{ text, message string }{
		{"2028-01-01 off\n\n\n\n2028-13-01 off 元旦", "第 5 行的日期：必须是 YYYY-MM-DD 格式的日期（“2028-13-01 off 元旦”）"},
		{"2028-01-01 maybe", "第 1 行：第二项必须是 off 或 workday（休 或 班）（“2028-01-01 maybe”）"},
		{`{"year":2028,"days":[{"name":"x","date":"2029-01-01","isOffDay":true}]}`, "文件中第 1 个日期的日期：必须是 2028 年的日期（days[0].date）"},
	} {
		resp, body := zh.post("/duty/holidays/national", url.Values{"mode": {"preview"}, "text": {bad.text}})
		wantStatus(t, "bad import in Chinese", resp, body, http.StatusUnprocessableEntity)
		wantFieldError(t, body, "text", bad.message)
		if got := fieldError(body, "text"); strings.Contains(got, "line ") || strings.Contains(got, "must") {
			t.Errorf("English in the Chinese error %q", got)
		}
	}
}
