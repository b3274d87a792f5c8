package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"herald/dispatch"
	"herald/kernel"
	"herald/reports"
)

// reportsService is the reports' service; the console and the API send nothing through
// it, so it needs no language of its own.
func (h *Handlers) reportsService() *reports.Analyst {
	return dispatch.Reports(h.Dispatch, "", h.PublicURL)
}

// reportOf works out one report (reports.Names) for the request's caller from its query
// (from, to, and group_by or sleep): what the API answers as JSON and the table of its
// CSV, in the reader's words.
func (h *Handlers) reportOf(c *gin.Context, name string) (any, reports.Table, error) {
	svc := h.reportsService()
	r, err := svc.Range(c.Query("from"), c.Query("to"))
	if err != nil {
		return nil, reports.Table{}, err
	}
	ctx, total := c.Request.Context(), tr(c, "reports.total")
	head := gin.H{"from": r.From, "to": r.To}
	switch name {
	case reports.ReportResponse:
		rep, err := svc.Response(ctx, actor(c), r, c.Query("group_by"))
		if err != nil {
			return nil, reports.Table{}, err
		}
		head["group_by"], head["rows"], head["overall"] = rep.GroupBy, rep.Rows, rep.Overall
		return head, rep.Table(total), nil
	case reports.ReportInterruptions:
		rep, err := svc.Interruptions(ctx, actor(c), r, c.Query("sleep"))
		if err != nil {
			return nil, reports.Table{}, err
		}
		head["sleep"], head["people"], head["total"] = rep.Sleep, rep.People, rep.Total
		return head, rep.Table(total), nil
	}
	rep, err := svc.Duty(ctx, r)
	if err != nil {
		return nil, reports.Table{}, err
	}
	head["people"], head["total"] = rep.People, rep.Total
	return head, rep.Table(total), nil
}

// writeReportCSV answers a report's table as CSV: headers in the reader's language,
// UTF-8 with a byte order mark.
func writeReportCSV(c *gin.Context, name string, t reports.Table) {
	headers := make([]string, len(t.Columns))
	for i, key := range t.Columns {
		headers[i] = tr(c, key)
	}
	c.Header("Content-Disposition", `attachment; filename="herald-`+name+`.csv"`)
	c.Data(http.StatusOK, "text/csv; charset=utf-8", t.CSV(headers))
}

// apiReport answers GET /api/v1/reports/<name>: JSON, or CSV with ?format=csv.
func (h *Handlers) apiReport(name string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if f := c.Query("format"); f != "" && f != "json" && f != "csv" {
			h.apiFail(c, kernel.Invalid("format", "api.list.one_of", "Values", "json, csv"))
			return
		}
		body, table, err := h.reportOf(c, name)
		if err != nil {
			h.apiFail(c, err)
			return
		}
		if c.Query("format") == "csv" {
			writeReportCSV(c, name, table)
			return
		}
		c.JSON(http.StatusOK, body)
	}
}

// APIResponseReport is GET /api/v1/reports/response.
func (h *Handlers) APIResponseReport(c *gin.Context) { h.apiReport(reports.ReportResponse)(c) }

// APIInterruptionsReport is GET /api/v1/reports/interruptions.
func (h *Handlers) APIInterruptionsReport(c *gin.Context) {
	h.apiReport(reports.ReportInterruptions)(c)
}

// APIDutyReport is GET /api/v1/reports/duty.
func (h *Handlers) APIDutyReport(c *gin.Context) { h.apiReport(reports.ReportDuty)(c) }

// reportScheduleJSON is a report schedule as the API reads and writes it.
type reportScheduleJSON struct {
	ID         int64        `json:"id"`
	Report     string       `json:"report"`
	Period     string       `json:"period"`
	Send       reports.Send `json:"send"`
	LastPeriod string       `json:"last_period"`
	CreatedBy  string       `json:"created_by"`
	CreatedAt  time.Time    `json:"created_at"`
}

func toReportScheduleJSON(s *reports.Schedule) reportScheduleJSON {
	return reportScheduleJSON{ID: s.ID, Report: s.Report, Period: s.Period, Send: s.Send, LastPeriod: s.LastPeriod,
		CreatedBy: s.CreatedBy, CreatedAt: s.CreatedAt}
}

// APIListReportSchedules is GET /api/v1/report-schedules.
func (h *Handlers) APIListReportSchedules(c *gin.Context) {
	list, err := h.reportsService().Schedules(c.Request.Context())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	out := make([]reportScheduleJSON, len(list))
	for i := range list {
		out[i] = toReportScheduleJSON(&list[i])
	}
	c.JSON(http.StatusOK, gin.H{"schedules": out})
}

// reportScheduleBody is a schedule as POST and PUT /api/v1/report-schedules take it.
type reportScheduleBody struct {
	Report string       `json:"report"`
	Period string       `json:"period"`
	Send   reports.Send `json:"send"`
}

func (b reportScheduleBody) input() reports.ScheduleInput {
	return reports.ScheduleInput{Report: b.Report, Period: b.Period, Send: b.Send}
}

// APICreateReportSchedule is POST /api/v1/report-schedules.
func (h *Handlers) APICreateReportSchedule(c *gin.Context) {
	var body reportScheduleBody
	if !decodeJSON(c, &body) {
		return
	}
	s, err := h.reportsService().CreateSchedule(c.Request.Context(), actor(c), body.input())
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusCreated, toReportScheduleJSON(s))
}

// APIUpdateReportSchedule is PUT /api/v1/report-schedules/:id.
func (h *Handlers) APIUpdateReportSchedule(c *gin.Context) {
	var body reportScheduleBody
	if !decodeJSON(c, &body) {
		return
	}
	s, err := h.reportSchedule(c)
	if err == nil {
		s, err = h.reportsService().UpdateSchedule(c.Request.Context(), actor(c), s, body.input())
	}
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toReportScheduleJSON(s))
}

// reportSchedule reads the schedule the path's id names.
func (h *Handlers) reportSchedule(c *gin.Context) (*reports.Schedule, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return nil, kernel.ErrNotFound
	}
	return h.reportsService().Schedule(c.Request.Context(), id)
}

// APIGetReportSchedule is GET /api/v1/report-schedules/:id.
func (h *Handlers) APIGetReportSchedule(c *gin.Context) {
	s, err := h.reportSchedule(c)
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.JSON(http.StatusOK, toReportScheduleJSON(s))
}

// APIDeleteReportSchedule is DELETE /api/v1/report-schedules/:id.
func (h *Handlers) APIDeleteReportSchedule(c *gin.Context) {
	s, err := h.reportSchedule(c)
	if err == nil {
		err = h.reportsService().DeleteSchedule(c.Request.Context(), actor(c), s)
	}
	if err != nil {
		h.apiFail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
