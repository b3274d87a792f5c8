package views

import (
	"net/url"

	"github.com/a-h/templ"
	"strconv"

	"herald/reports"
)

// ReportsView is the reports page: the range and choices asked for, the three reports
// over it (nil when the range could not be read) and their charts.
type ReportsView struct {
	From, To, GroupBy, Sleep string
	// Query is the range and choices as a URL query, for the CSV links.
	Query         string
	Response      *reports.ResponseReport
	Interruptions *reports.InterruptionsReport
	Duty          *reports.DutyReport
	Charts        map[string]ReportChart
	Admin         bool
}

// ReportChart is a horizontal bar chart drawn on the server: a row per person or group,
// its label and figure in the page's text, its bar an inline SVG of stacked segments.
// Legend names the segments' kinds (catalog keys, by class).
type ReportChart struct {
	Title  string
	Legend []ChartKey
	Bars   []ReportBar
}

// ChartKey is one kind of segment: its class and its catalog key.
type ChartKey struct{ Class, Key string }

// ReportBar is one row of a chart; its segments are in percent of the widest row.
type ReportBar struct {
	Label, Value string
	Segments     []BarSegment
}

// BarSegment is one stretch of a bar: where it starts and how wide, in percent.
type BarSegment struct {
	Class string
	X, W  float64
	// Thin draws the segment as a line through the bar's middle (a percentile's reach).
	Thin bool
}

// stack lays counts side by side as segments of classes, in percent of most.
func stack(most int, classes []string, counts ...int) []BarSegment {
	var out []BarSegment
	x := 0.0
	for i, n := range counts {
		if n == 0 {
			continue
		}
		w := float64(n) * 100 / float64(max(most, 1))
		out = append(out, BarSegment{Class: classes[i], X: x, W: w})
		x += w
	}
	return out
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// NewReportCharts draws the three reports' charts: the median seconds to acknowledge
// per group (a line on to the 90th percentile), interruptions per person stacked by
// work, rest and sleep hours, and duty days per person stacked by kind of day.
func NewReportCharts(resp *reports.ResponseReport, in *reports.InterruptionsReport, dutyLoad *reports.DutyReport, none string) map[string]ReportChart {
	charts := map[string]ReportChart{}
	if resp != nil {
		c := ReportChart{Title: "reports.chart.ack", Legend: []ChartKey{{"seg-ack", "reports.col.ack_median"}, {"seg-p90", "reports.col.ack_p90"}}}
		most := 0.0
		for _, r := range resp.Rows {
			if r.AckP90 != nil {
				most = max(most, *r.AckP90)
			}
		}
		for _, r := range resp.Rows {
			label := r.Key
			if label == "" {
				label = none
			}
			if r.Name != "" {
				label += " " + r.Name
			}
			bar := ReportBar{Label: label, Value: "-"}
			if r.AckMedian != nil && most > 0 {
				m, p := *r.AckMedian*100/most, *r.AckP90*100/most
				bar.Value = num(*r.AckMedian) + " / " + num(*r.AckP90)
				bar.Segments = []BarSegment{{Class: "seg-ack", W: m}, {Class: "seg-p90", X: m, W: p - m, Thin: true}}
			}
			c.Bars = append(c.Bars, bar)
		}
		charts[reports.ReportResponse] = c
	}
	if in != nil {
		c := ReportChart{Title: "reports.chart.interruptions", Legend: []ChartKey{{"seg-work", "reports.col.work_hours"},
			{"seg-rest", "reports.col.rest_hours"}, {"seg-sleep", "reports.col.sleep_hours"}}}
		most := 0
		for _, p := range in.People {
			most = max(most, p.Interruptions)
		}
		for _, p := range in.People {
			c.Bars = append(c.Bars, ReportBar{Label: p.Recipient + " " + p.Name, Value: strconv.Itoa(p.Interruptions),
				Segments: stack(most, []string{"seg-work", "seg-rest", "seg-sleep"}, p.Work, p.Rest, p.Sleep)})
		}
		charts[reports.ReportInterruptions] = c
	}
	if dutyLoad != nil {
		kinds := []string{"seg-workday", "seg-weekend", "seg-holiday", "seg-makeup"}
		c := ReportChart{Title: "reports.chart.duty"}
		for i, k := range reports.DayKinds {
			c.Legend = append(c.Legend, ChartKey{kinds[i], "reports.col." + k})
		}
		most := 0
		for _, p := range dutyLoad.People {
			most = max(most, p.Total)
		}
		for _, p := range dutyLoad.People {
			c.Bars = append(c.Bars, ReportBar{Label: p.Recipient + " " + p.Name, Value: strconv.Itoa(p.Total),
				Segments: stack(most, kinds, p.Workday, p.Weekend, p.Holiday, p.MakeupWorkday)})
		}
		charts[reports.ReportDuty] = c
	}
	return charts
}

// reportCSV is the console's CSV link of one report over the page's range.
func reportCSV(v ReportsView, name string) templ.SafeURL {
	return templ.SafeURL("/reports/csv/" + url.PathEscape(name) + "?" + v.Query)
}

// ratePercent writes a rate as a percentage.
func ratePercent(rate float64) string { return strconv.FormatFloat(rate*100, 'f', 1, 64) + "%" }

// segmentY and segmentH place a segment in the bar's 10 units of height.
func segmentY(s BarSegment) string {
	if s.Thin {
		return "4"
	}
	return "0"
}

func segmentH(s BarSegment) string {
	if s.Thin {
		return "2"
	}
	return "10"
}
