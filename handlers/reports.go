package handlers

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/kernel"
	"herald/reports"
	"herald/views"
)

// The console's reports page, its CSV downloads and the report schedules' page; the
// figures come from the reports' service, as the API's do.

// Reports is the reports page (?preset=this_week|last_month, or from and to, with
// group_by and sleep): the three reports over the range, with charts and tables. A
// range or choice that cannot be read is shown beside its field.
func (h *Handlers) Reports(c *gin.Context) {
	svc := h.reportsService()
	v := views.ReportsView{From: c.Query("from"), To: c.Query("to"), GroupBy: c.DefaultQuery("group_by", reports.ByPolicy),
		Sleep: c.DefaultQuery("sleep", reports.DefaultSleep)}
	if p := c.Query("preset"); p != "" || (v.From == "" && v.To == "") {
		v.From, v.To = svc.Preset(p)
	}
	if u := CurrentUser(c); u != nil && u.Role == access.RoleAdmin {
		v.Admin = true
	}
	v.Query = url.Values{"from": {v.From}, "to": {v.To}, "group_by": {v.GroupBy}, "sleep": {v.Sleep}}.Encode()
	title := tr(c, "reports.title")
	err := h.fillReports(c, svc, &v)
	if errs, bad := fieldErrors(c, err); bad {
		render(c, http.StatusUnprocessableEntity, views.ReportsPage(page(c, title, "reports"), v, errs))
		return
	}
	if err != nil {
		h.fail(c, err)
		return
	}
	render(c, http.StatusOK, views.ReportsPage(page(c, title, "reports"), v, nil))
}

// fillReports works out the page's three reports and their charts.
func (h *Handlers) fillReports(c *gin.Context, svc *reports.Analyst, v *views.ReportsView) error {
	r, err := svc.Range(v.From, v.To)
	if err != nil {
		return err
	}
	ctx, by := c.Request.Context(), actor(c)
	resp, err := svc.Response(ctx, by, r, v.GroupBy)
	if err != nil {
		return err
	}
	in, err := svc.Interruptions(ctx, by, r, v.Sleep)
	if err != nil {
		return err
	}
	load, err := svc.Duty(ctx, r)
	if err != nil {
		return err
	}
	v.Response, v.Interruptions, v.Duty = resp, in, load
	v.Charts = views.NewReportCharts(resp, in, load, tr(c, "reports.none"))
	return nil
}

// ReportCSV is GET /reports/csv/:report: one report over the page's range as CSV, its
// headers in the reader's language.
func (h *Handlers) ReportCSV(c *gin.Context) {
	name := c.Param("report")
	if !slices.Contains(reports.Names, name) {
		h.fail(c, kernel.ErrNotFound)
		return
	}
	_, table, err := h.reportOf(c, name)
	if err != nil {
		h.fail(c, err)
		return
	}
	writeReportCSV(c, name, table)
}

// ReportSchedules lists the report schedules with the form that adds one.
func (h *Handlers) ReportSchedules(c *gin.Context) {
	h.renderReportSchedules(c, http.StatusOK, views.ReportScheduleForm{Report: reports.ReportResponse, Period: reports.Weekly}, h.notice(c), nil)
}

func (h *Handlers) renderReportSchedules(c *gin.Context, status int, f views.ReportScheduleForm, notice string, errs map[string]string) {
	list, err := h.reportsService().Schedules(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	render(c, status, views.ReportSchedulesPage(page(c, tr(c, "reports.schedule.title"), "reports"), list, f, notice, errs))
}

// CreateReportSchedule adds a report schedule from the form.
func (h *Handlers) CreateReportSchedule(c *gin.Context) {
	f := views.ReportScheduleForm{Report: c.PostForm("report"), Period: c.PostForm("period"), Recipients: c.PostForm("recipients"),
		Departments: c.PostForm("departments"), Groups: c.PostForm("groups"), Account: strings.TrimSpace(c.PostForm("account")),
		ToOnDuty: c.PostForm("to_on_duty") != ""}
	in := reports.ScheduleInput{Report: f.Report, Period: f.Period, Send: reports.Send{Account: f.Account, Recipients: splitNames(f.Recipients),
		Departments: splitNames(f.Departments), Groups: splitNames(f.Groups), ToOnDuty: f.ToOnDuty}}
	if _, err := h.reportsService().CreateSchedule(c.Request.Context(), actor(c), in); err != nil {
		h.failOr(c, err, func(a answer) {
			h.renderReportSchedules(c, a.Status, f, "", map[string]string{a.Field: a.Message})
		})
		return
	}
	h.redirectNotice(c, "/reports/schedules", "note", tr(c, "reports.schedule.created"))
}

// DeleteReportSchedule removes a report schedule.
func (h *Handlers) DeleteReportSchedule(c *gin.Context) {
	s, err := h.reportSchedule(c)
	if err == nil {
		err = h.reportsService().DeleteSchedule(c.Request.Context(), actor(c), s)
	}
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "reports.schedule.none"))
		return
	}
	h.redirectNotice(c, "/reports/schedules", "note", tr(c, "reports.schedule.deleted"))
}
