package dispatch

import (
	"context"

	"herald/alert"
	"herald/models"
	"herald/reports"
)

// SourceReport is the source of the batches a report schedule sends.
const SourceReport = "report"

// Reports is the reports' service on the dispatcher's store, in its time zone, sending
// scheduled reports through the intake as ordinary notices. It is a function, not a
// method, so the dispatcher's own surface stays as it is. language and publicURL are
// the scheduled notices' language and the base of their link to the page.
func Reports(d *Dispatcher, language, publicURL string) *reports.Analyst {
	return reports.NewService(reports.Config{Store: reports.NewStore(d.store.DB()), Duty: d.store.Duty(), Staff: d.store.Directory(),
		Policies: alert.Of(d.store), Location: d.loc, Now: d.clock, Sender: reportSender{d}, Language: language,
		PublicURL: publicURL, Log: d.log})
}

// reportSender sends a scheduled report's summary as a batch of source "report", with
// the limits, retries and records of any other send (reports.Sender).
type reportSender struct{ d *Dispatcher }

func (s reportSender) SendReport(ctx context.Context, to reports.Send, subject, text string) error {
	_, err := s.d.Submit(ctx, Request{Source: SourceReport, Actor: "report-schedule", Account: to.Account, Platform: to.Platform,
		Recipients: to.Recipients, Departments: to.Departments, ToOnDuty: to.ToOnDuty, Groups: to.Groups,
		Subject: subject, Text: text, Priority: models.PriorityNormal})
	return err
}
