package reports

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strconv"
)

// Table is a report as rows of text for its CSV: Columns are the catalog keys of its
// headers (the reader's language names them), Rows its values.
type Table struct {
	Columns []string
	Rows    [][]string
}

// CSV writes t with the headers given (Columns in the reader's words) as UTF-8 with a
// byte order mark, so that Excel opens Chinese correctly.
func (t Table) CSV(headers []string) []byte {
	var b bytes.Buffer
	b.WriteString("\uFEFF")
	w := csv.NewWriter(&b)
	_ = w.Write(headers)
	_ = w.WriteAll(t.Rows) // a bytes.Buffer does not fail
	return b.Bytes()
}

func itoa(n int) string { return strconv.Itoa(n) }

// Seconds writes a time in seconds as briefly as it reads (3.8, 15); none when there
// is no time.
func Seconds(v *float64, none string) string {
	if v == nil {
		return none
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// Table is the response report as a table: a row per group, then all alerts, named total.
func (r *ResponseReport) Table(total string) Table {
	t := Table{Columns: []string{"reports.col.group." + r.GroupBy, "reports.col.name", "reports.col.alerts", "reports.col.acknowledged",
		"reports.col.ack_rate", "reports.col.ack_median", "reports.col.ack_p90", "reports.col.resolve_median",
		"reports.col.resolve_p90", "reports.col.escalated", "reports.col.exhausted"}}
	row := func(x Response) []string {
		return []string{x.Key, x.Name, itoa(x.Alerts), itoa(x.Acknowledged), strconv.FormatFloat(x.AckRate, 'f', -1, 64),
			Seconds(x.AckMedian, ""), Seconds(x.AckP90, ""), Seconds(x.ResolveMedian, ""), Seconds(x.ResolveP90, ""), itoa(x.Escalated), itoa(x.Exhausted)}
	}
	for _, x := range r.Rows {
		t.Rows = append(t.Rows, row(x))
	}
	t.Rows = append(t.Rows, row(r.Overall))
	t.Rows[len(t.Rows)-1][0] = total
	return t
}

// Table is the interruptions report as a table: a row per person, then their sum, named total.
func (r *InterruptionsReport) Table(total string) Table {
	t := Table{Columns: []string{"reports.col.recipient", "reports.col.name", "reports.col.notices", "reports.col.interruptions",
		"reports.col.work_hours", "reports.col.rest_hours", "reports.col.sleep_hours"}}
	for _, x := range slices.Concat(r.People, []Interruptions{r.Total}) {
		t.Rows = append(t.Rows, []string{x.Recipient, x.Name, itoa(x.Notices), itoa(x.Interruptions), itoa(x.Work), itoa(x.Rest), itoa(x.Sleep)})
	}
	t.Rows[len(t.Rows)-1][0] = total
	return t
}

// Table is the duty load report as a table: a row per person, then their sum, named total.
func (r *DutyReport) Table(total string) Table {
	t := Table{Columns: []string{"reports.col.recipient", "reports.col.name", "reports.col.workday", "reports.col.weekend",
		"reports.col.holiday", "reports.col.makeup_workday", "reports.col.total"}}
	for _, x := range slices.Concat(r.People, []DutyLoad{r.Total}) {
		t.Rows = append(t.Rows, []string{x.Recipient, x.Name, itoa(x.Workday), itoa(x.Weekend), itoa(x.Holiday), itoa(x.MakeupWorkday), itoa(x.Total)})
	}
	t.Rows[len(t.Rows)-1][0] = total
	return t
}
