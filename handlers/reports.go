package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
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

// scheduleForm reads the schedule form: as submitted, to show again, and as the
// service's input.
func scheduleForm(c *gin.Context) (views.ReportScheduleForm, reports.ScheduleInput) {
	f := views.ReportScheduleForm{Report: c.PostForm("report"), Period: c.PostForm("period"), Recipients: c.PostForm("recipients"),
		Departments: c.PostForm("departments"), Groups: c.PostForm("groups"), Account: strings.TrimSpace(c.PostForm("account")),
		ToOnDuty: c.PostForm("to_on_duty") != ""}
	f.Version, _ = strconv.Atoi(c.PostForm("version"))
	return f, reports.ScheduleInput{Report: f.Report, Period: f.Period, Send: reports.Send{Account: f.Account, Recipients: splitNames(f.Recipients),
		Departments: splitNames(f.Departments), Groups: splitNames(f.Groups), ToOnDuty: f.ToOnDuty}}
}

// scheduleFormOf is the form of a schedule as stored, to edit it.
func scheduleFormOf(s *reports.Schedule) views.ReportScheduleForm {
	return views.ReportScheduleForm{ID: s.ID, Version: s.Version, Report: s.Report, Period: s.Period,
		Recipients: strings.Join(s.Send.Recipients, ", "), Departments: strings.Join(s.Send.Departments, ", "),
		Groups: strings.Join(s.Send.Groups, ", "), Account: s.Send.Account, ToOnDuty: s.Send.ToOnDuty}
}

// EditReportSchedule shows the schedules with the form filled with one of them.
func (h *Handlers) EditReportSchedule(c *gin.Context) {
	s, err := h.reportSchedule(c)
	if err != nil {
		h.fail(c, err, saying(kernel.ErrNotFound, "reports.schedule.none"))
		return
	}
	h.renderReportSchedules(c, http.StatusOK, scheduleFormOf(s), "", nil)
}

// UpdateReportSchedule saves the edit form over the schedule as the form read it (its
// version, which the service's compare-and-set judges): one changed meanwhile is shown
// again as it is now, with nothing saved.
func (h *Handlers) UpdateReportSchedule(c *gin.Context) {
	f, in := scheduleForm(c)
	s, err := h.reportSchedule(c)
	if err == nil {
		f.ID, s.Version = s.ID, f.Version
		_, err = h.reportsService().UpdateSchedule(c.Request.Context(), actor(c), s, in)
	}
	if errors.Is(err, kernel.ErrStateChanged) {
		if s, err = h.reportSchedule(c); err == nil {
			h.renderReportSchedules(c, http.StatusConflict, scheduleFormOf(s), "", map[string]string{"": tr(c, "reports.schedule.changed")})
			return
		}
	}
	if err != nil {
		h.failOr(c, err, func(a answer) {
			h.renderReportSchedules(c, a.Status, f, "", map[string]string{a.Field: a.Message})
		}, saying(kernel.ErrNotFound, "reports.schedule.none"))
		return
	}
	h.redirectNotice(c, "/reports/schedules", "note", tr(c, "reports.schedule.updated"))
}

// CreateReportSchedule adds a report schedule from the form.
func (h *Handlers) CreateReportSchedule(c *gin.Context) {
	f, in := scheduleForm(c)
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
