package inbound

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"herald/kernel"
)

// webhook is the body of Alertmanager's webhook (version 4,
// https://prometheus.io/docs/alerting/latest/configuration/#webhook_config) and of
// Grafana's webhook contact point, which posts the same shape with fields of its own.
// The alerts are read one by one, so that a fault names its alert.
type webhook struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []json.RawMessage `json:"alerts"`
	// Grafana's; its title, state and message describe the whole group, so an event
	// takes its own from its alert instead.
	OrgID   json.Number `json:"orgId"`
	Title   string      `json:"title"`
	State   string      `json:"state"`
	Message string      `json:"message"`
}

// webhookAlert is one alert of a webhook body.
type webhookAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     string            `json:"startsAt"`
	EndsAt       string            `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
	// Grafana's.
	SilenceURL   string             `json:"silenceURL"`
	DashboardURL string             `json:"dashboardURL"`
	PanelURL     string             `json:"panelURL"`
	ImageURL     string             `json:"imageURL"`
	Values       map[string]float64 `json:"values"`
	ValueString  string             `json:"valueString"`
}

// normalizeAlertmanager reads an Alertmanager (or, with grafana, a Grafana) webhook
// body: one event per alert, its dedup key the alert's fingerprint. Grafana numbers its
// payload's version on its own ("1"), so only Alertmanager's is checked.
func normalizeAlertmanager(body []byte, grafana bool) ([]Event, error) {
	var w webhook
	if err := decode(body, &w, ""); err != nil {
		return nil, err
	}
	if !grafana && w.Version != "" && w.Version != "4" {
		return nil, kernel.Invalid("version", "inbound.alertmanager.version", "Version", w.Version)
	}
	if w.Alerts == nil {
		return nil, kernel.Invalid("alerts", "inbound.alertmanager.alerts")
	}
	if err := checkCount("alerts", len(w.Alerts)); err != nil {
		return nil, err
	}
	ats := make([]string, len(w.Alerts))
	for i := range ats {
		ats[i] = index("alerts", i)
	}
	sender := Link{Name: "Alertmanager", URL: w.ExternalURL}
	if grafana {
		sender.Name = "Grafana"
	}
	return normalizeEach(w.Alerts, ats, "fingerprint", func(item json.RawMessage, at string) (Event, error) {
		var a webhookAlert
		if err := decode(item, &a, at); err != nil {
			return Event{}, err
		}
		return a.event(at, sender)
	})
}

// event is the alert as an event: status from the alert, severity from its severity
// label, title from its summary or else its name, links to its rule, its runbook,
// Grafana's pages and the sender (externalURL).
func (a webhookAlert) event(at string, sender Link) (Event, error) {
	if a.Status != StatusFiring && a.Status != StatusResolved {
		return Event{}, kernel.Invalid(path(at, "status"), "inbound.status", "Value", a.Status, "Statuses", strings.Join(Statuses, ", "))
	}
	startsAt, err := timeOf(path(at, "startsAt"), a.StartsAt)
	if err != nil {
		return Event{}, err
	}
	endsAt, err := timeOf(path(at, "endsAt"), a.EndsAt)
	if err != nil {
		return Event{}, err
	}
	title := strings.TrimSpace(a.Annotations["summary"])
	if title == "" {
		title = strings.TrimSpace(a.Labels["alertname"])
	}
	if title == "" {
		return Event{}, kernel.Invalid(path(at, "labels.alertname"), "inbound.alertmanager.title")
	}
	return Event{
		DedupKey:    a.Fingerprint,
		Status:      a.Status,
		Severity:    severityOf(a.Labels["severity"]),
		Title:       title,
		Description: joinLines(a.Annotations["description"], a.valuesText()),
		Labels:      a.Labels,
		Links: []Link{
			{Name: "Source", URL: a.GeneratorURL},
			{Name: "Runbook", URL: a.Annotations["runbook_url"]},
			{Name: "Dashboard", URL: a.DashboardURL},
			{Name: "Panel", URL: a.PanelURL},
			{Name: "Image", URL: a.ImageURL},
			{Name: "Silence", URL: a.SilenceURL},
			sender,
		},
		StartsAt: startsAt,
		EndsAt:   endsAt,
	}, nil
}

// valuesText is what Grafana says the query measured: its valueString, or else its
// values, as "B=44.2, C=1".
func (a webhookAlert) valuesText() string {
	if a.ValueString != "" || len(a.Values) == 0 {
		return a.ValueString
	}
	parts := make([]string, 0, len(a.Values))
	for _, name := range slices.Sorted(maps.Keys(a.Values)) {
		parts = append(parts, fmt.Sprintf("%s=%g", name, a.Values[name]))
	}
	return strings.Join(parts, ", ")
}

// joinLines joins the parts that are not blank, a blank line between each.
func joinLines(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "\n\n")
}
