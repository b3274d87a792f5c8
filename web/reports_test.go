package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"herald/alert"
	"herald/duty"
	"herald/internal/testenv"
)

// reportsFixture gives the console's database October 2026 with 国庆 (1st–7th off) and
// a make-up Saturday (the 10th, as a Monday), two read keys, and an alert of each in
// its own batch, opened on the 20th at 09:00 in the console's time zone: erp's
// (policy core) acknowledged after 2 s and notifying E1001, crm's (policy other)
// exhausted and notifying E1002. It returns erp's and crm's secrets.
func (c *console) reportsFixture() (erp, crm string) {
	c.t.Helper()
	ctx := c.t.Context()
	monday := 1
	var days []duty.Holiday
	for d := 1; d <= 7; d++ {
		days = append(days, duty.Holiday{Date: fmt.Sprintf("2026-10-%02d", d), Kind: duty.HolidayOff, Name: "国庆"})
	}
	days = append(days, duty.Holiday{Date: "2026-10-10", Kind: duty.HolidayWorkday, AsWeekday: &monday, Name: "调休"})
	for i := range days {
		if err := c.store.Duty().SetHoliday(ctx, &days[i]); err != nil {
			c.t.Fatal(err)
		}
	}
	keyOf := func(name string) (int64, string) {
		k, secret, err := c.store.Access().CreateAPIKey(ctx, name, "read", adminUser)
		if err != nil {
			c.t.Fatal(err)
		}
		return k.ID, secret
	}
	erpID, erp := keyOf("erp")
	crmID, crm := keyOf("crm")
	opened := time.Date(2026, 10, 20, 9, 0, 0, 0, c.loc).UTC()
	acked := opened.Add(2 * time.Second)
	testenv.SeedRows(c.t, c.store, "batches", []testenv.Row{testenv.BatchRow("rb-erp", &erpID, opened), testenv.BatchRow("rb-crm", &crmID, opened)})
	testenv.SeedRows(c.t, c.store, "alerts", []testenv.Row{
		{"id": 901, "batch_id": "rb-erp", "policy": "core", "policy_copy": "{}", "state": alert.AlertAcknowledged, "step": 1, "round": 1,
			"account_id": 1, "opened_at": opened, "acknowledged_at": &acked, "text": "t"},
		{"id": 902, "batch_id": "rb-crm", "policy": "other", "policy_copy": "{}", "state": alert.AlertExhausted, "step": 2, "round": 1,
			"account_id": 1, "opened_at": opened, "acknowledged_at": (*time.Time)(nil), "text": "t"},
	})
	a1, a2 := int64(901), int64(902)
	testenv.SeedRows(c.t, c.store, "messages", []testenv.Row{
		testenv.SentMessage("rm-1", "rb-erp", c.recipient("E1001").ID, &a1, opened),
		testenv.SentMessage("rm-2", "rb-crm", c.recipient("E1002").ID, &a2, opened),
	})
	return erp, crm
}

// TestReportsAPI: the three reports answer JSON and CSV as docs/openapi.json says; a
// read key counts only the alerts and notices of its own batches, an admin key all;
// the duty report's totals are what the duty calendar's API shows for the month; the
// CSV in zh-CN opens with a byte order mark and Chinese headers; bad input is 422
// naming its field; report schedules are an admin's, made, read and deleted, and a
// refused one writes nothing.
func TestReportsAPI(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	erpSecret, _ := c.reportsFixture()
	erp, admin := c.api(erpSecret), c.apiKey("ops", "admin")
	month := "from=2026-10-01&to=2026-10-31"

	_, body, _ := erp.call("GET", "/api/v1/reports/response?"+month+"&group_by=policy", "")
	if rows, _ := body["rows"].([]any); len(rows) != 1 || rows[0].(map[string]any)["key"] != "core" || rows[0].(map[string]any)["ack_seconds_median"] != 2.0 {
		t.Errorf("erp's response report: %v", body["_raw"])
	}
	status, body, _ := admin.call("GET", "/api/v1/reports/response?"+month+"&group_by=person", "")
	overall, _ := body["overall"].(map[string]any)
	if rows, _ := body["rows"].([]any); status != http.StatusOK || len(rows) != 2 || overall["alerts"] != 2.0 || overall["exhausted"] != 1.0 || overall["ack_rate"] != 0.5 {
		t.Errorf("admin's response report by person: %d %v", status, body["_raw"])
	}
	_, body, _ = erp.call("GET", "/api/v1/reports/interruptions?"+month, "")
	if people, _ := body["people"].([]any); len(people) != 1 || people[0].(map[string]any)["recipient"] != "E1001" || people[0].(map[string]any)["work_hours"] != 1.0 {
		t.Errorf("erp's interruptions: %v", body["_raw"])
	}

	// The duty report against the duty calendar's own answer for the month.
	_, cal, _ := admin.call("GET", "/api/v1/duty/calendar?month=2026-10", "")
	byKind := map[string]float64{}
	for _, d := range cal["days"].([]any) {
		day := d.(map[string]any)
		byKind[day["kind"].(string)] += float64(len(day["on_duty"].([]any)))
	}
	_, body, _ = erp.call("GET", "/api/v1/reports/duty?"+month, "")
	total, _ := body["total"].(map[string]any)
	for _, kind := range []string{"workday", "weekend", "holiday", "makeup_workday"} {
		if total[kind] != byKind[kind] {
			t.Errorf("%s: report %v, calendar %v", kind, total[kind], byKind[kind])
		}
	}
	if byKind["makeup_workday"] != 2 || byKind["holiday"] != 0 {
		t.Errorf("the calendar's month: %v", byKind)
	}

	status, body, header := admin.in("zh-CN").call("GET", "/api/v1/reports/duty?"+month+"&format=csv", "")
	raw, _ := body["_raw"].(string)
	if status != http.StatusOK || !strings.HasPrefix(header.Get("Content-Type"), "text/csv") ||
		!strings.HasPrefix(raw, "\uFEFF工号,姓名,工作日,周末,法定节假日,调休上班,合计\n") || !strings.Contains(raw, "\n合计,") {
		t.Errorf("zh-CN CSV: %d %s %q", status, header.Get("Content-Type"), raw)
	}

	for _, bad := range []struct{ path, field string }{
		{"/api/v1/reports/response?" + month + "&group_by=team", "group_by"},
		{"/api/v1/reports/duty?from=2026-10-31&to=2026-10-01", "to"},
		{"/api/v1/reports/interruptions?" + month + "&sleep=late", "sleep"},
		{"/api/v1/reports/duty?from=2026-13-01", "from"},
	} {
		if status, body, _ := admin.call("GET", bad.path, ""); status != http.StatusUnprocessableEntity || errorField(body) != bad.field {
			t.Errorf("%s: %d %v, want 422 naming %s", bad.path, status, body["_raw"], bad.field)
		}
	}

	if status, _, _ := erp.call("GET", "/api/v1/report-schedules", ""); status != http.StatusForbidden {
		t.Errorf("a read key lists schedules: %d", status)
	}
	if status, body, _ := admin.call("POST", "/api/v1/report-schedules", `{"report":"duty","period":"monthly","send":{"recipients":["E9999"]}}`); status != http.StatusUnprocessableEntity || errorField(body) != "send.recipients" {
		t.Errorf("a schedule to nobody known: %d %v", status, body["_raw"])
	}
	if n := c.countRows("report_schedules"); n != 0 {
		t.Fatalf("a refused schedule wrote %d rows", n)
	}
	status, body, _ = admin.call("POST", "/api/v1/report-schedules", `{"report":"duty","period":"monthly","send":{"recipients":["E1001"],"account":"sandbox"}}`)
	id, _ := body["id"].(float64)
	if status != http.StatusCreated || body["last_period"] == "" {
		t.Fatalf("create: %d %v", status, body["_raw"])
	}
	path := fmt.Sprintf("/api/v1/report-schedules/%d", int64(id))
	if status, body, _ := admin.call("GET", path, ""); status != http.StatusOK || body["report"] != "duty" {
		t.Errorf("get: %d %v", status, body["_raw"])
	}
	lastMonthly, _ := body["last_period"].(string)
	// Changed to a weekly report to a department: it starts with the next week.
	if status, body, _ := admin.call("PUT", path, `{"report":"interruptions","period":"weekly","send":{"departments":["IT"]}}`); status != http.StatusOK ||
		body["report"] != "interruptions" || body["period"] != "weekly" || body["last_period"] == lastMonthly || len(body["last_period"].(string)) != len("2006-01-02") {
		t.Errorf("put: %d %v", status, body["_raw"])
	}
	if status, body, _ := admin.call("PUT", path, `{"report":"interruptions","period":"daily","send":{"departments":["IT"]}}`); status != http.StatusUnprocessableEntity || errorField(body) != "period" {
		t.Errorf("put a daily period: %d %v, want 422 naming period", status, body["_raw"])
	}
	if status, body, _ := admin.call("GET", path, ""); status != http.StatusOK || body["period"] != "weekly" {
		t.Errorf("after a refused put: %d %v, want it weekly still", status, body["_raw"])
	}
	if n := c.countRows("audit_log WHERE action = 'report_schedule.update'"); n != 1 {
		t.Errorf("%d audit entries of a changed schedule, want 1", n)
	}
	if status, _, _ := admin.call("DELETE", path, ""); status != http.StatusNoContent {
		t.Errorf("delete: %d", status)
	}
	if status, _, _ := admin.call("GET", path, ""); status != http.StatusNotFound {
		t.Errorf("get after delete: %d", status)
	}
}

// TestReportsInBrowser: in Chinese, the reports page's range picker takes last month
// and then a custom range, and the page draws the three charts over it; the schedules
// page's form adds a weekly report to a person.
func TestReportsInBrowser(t *testing.T) {
	t.Parallel()
	c := newConsole(t)
	c.reportsFixture()
	ctx := c.chineseBrowser(t, adminUser)
	q := chromedp.ByQuery
	var shown, dutyChart, rows, dutyTable string
	err := chromedp.Run(ctx,
		chromedp.Navigate(c.url+"/reports"), chromedp.WaitVisible(`#preset-last-month`, q),
		chromedp.Click(`#preset-last-month`, q), chromedp.WaitVisible(`#chart-duty`, q),
		chromedp.SetValue(`#from`, "2026-10-01", q), chromedp.SetValue(`#to`, "2026-10-31", q),
		chromedp.SetValue(`#group_by`, "person", q),
		chromedp.Submit(`#from`, q), chromedp.WaitVisible(`#report-range-shown`, q),
		chromedp.Text(`#report-range-shown`, &shown, q),
		chromedp.Text(`#chart-duty`, &dutyChart, q),
		chromedp.Text(`#chart-response`, &rows, q),
		chromedp.Text(`#report-duty table`, &dutyTable, q),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(shown, "2026-10-01 至 2026-10-31") || !strings.Contains(dutyChart, "调休上班") || !strings.Contains(rows, "E1001") {
		t.Errorf("custom range: %q / %q / %q", shown, dutyChart, rows)
	}
	if !strings.Contains(dutyTable, "Li Wei（E1001）") {
		t.Errorf("the duty table names people as %q, want Li Wei（E1001）", dutyTable)
	}
	var listed string
	err = chromedp.Run(ctx,
		chromedp.Navigate(c.url+"/reports/schedules"), chromedp.WaitVisible(`#report-schedule-form`, q),
		chromedp.SetValue(`#report`, "interruptions", q), chromedp.SetValue(`#period`, "weekly", q),
		chromedp.SendKeys(`#recipients`, "E1001，E1002", q),
		chromedp.Click(`#schedule-save`, q), chromedp.WaitVisible(`#report-schedules`, q),
		chromedp.Text(`#report-schedules`, &listed, q),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(listed, "打扰") || !strings.Contains(listed, "每周") || !strings.Contains(listed, "E1001, E1002") {
		t.Errorf("schedules: %q", listed)
	}
	// Edited: the form comes filled in, and is saved as a monthly duty report.
	var filled string
	err = chromedp.Run(ctx,
		chromedp.Click(`#report-schedules tr[data-schedule] a.button`, q), chromedp.WaitVisible(`#schedule-editing`, q),
		chromedp.Value(`#recipients`, &filled, q),
		chromedp.SetValue(`#report`, "duty", q), chromedp.SetValue(`#period`, "monthly", q),
		chromedp.Click(`#schedule-save`, q), chromedp.WaitNotPresent(`#schedule-editing`, q),
		chromedp.Text(`#report-schedules`, &listed, q),
	)
	if err != nil {
		t.Fatal(err)
	}
	if filled != "E1001, E1002" || !strings.Contains(listed, "值班") || !strings.Contains(listed, "每月") {
		t.Errorf("edited: form filled with %q, list %q", filled, listed)
	}
}

// TestReportScheduleEditedMeanwhile: the console's edit form saves over the schedule as
// it read it; one changed since (here through the API) is shown as it is now, 409, with
// nothing saved.
func TestReportScheduleEditedMeanwhile(t *testing.T) {
	c := newConsole(t)
	c.reportsFixture()
	s := c.as(adminUser)
	admin := c.apiKey("sched-admin", "admin")
	_, body, _ := admin.call("POST", "/api/v1/report-schedules", `{"report":"duty","period":"weekly","send":{"recipients":["E1001"]}}`)
	id := int64(body["id"].(float64))
	edit := fmt.Sprintf("/reports/schedules/%d", id)
	_, page := s.get(edit + "/edit")
	if !strings.Contains(page, `name="version" value="1"`) {
		t.Fatalf("the edit form carries no version:\n%s", page)
	}
	if status, _, _ := admin.call("PUT", fmt.Sprintf("/api/v1/report-schedules/%d", id), `{"report":"duty","period":"weekly","send":{"recipients":["E1002"]}}`); status != http.StatusOK {
		t.Fatalf("put: %d", status)
	}
	form := url.Values{"version": {"1"}, "report": {"response"}, "period": {"weekly"}, "recipients": {"E1003"}}
	res, page := s.post(edit, form)
	if status := res.StatusCode; status != http.StatusConflict || !strings.Contains(page, "E1002") {
		t.Errorf("a stale edit: %d, want 409 showing the schedule as it is now", res.StatusCode)
	}
	_, body, _ = admin.call("GET", fmt.Sprintf("/api/v1/report-schedules/%d", id), "")
	if body["report"] != "duty" {
		t.Errorf("after a stale edit the schedule reads %v", body["_raw"])
	}
	form.Set("version", "2")
	if res, _ := s.post(edit, form); res.StatusCode != http.StatusSeeOther {
		t.Errorf("an edit of the schedule as it is: %d, want 303", res.StatusCode)
	}
	_, body, _ = admin.call("GET", fmt.Sprintf("/api/v1/report-schedules/%d", id), "")
	if body["report"] != "response" {
		t.Errorf("after the edit the schedule reads %v", body["_raw"])
	}
}
