package inbound

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/delivery"
	"herald/i18n"
	"herald/incident"
	"herald/kernel"
)

// An event's way through an integration: a firing event takes its dedup key (the
// compare-and-set that makes concurrent duplicates one alert) and opens an alert through
// the first route that matches it, the intake sending its notices and the policy
// escalating; a firing event whose key is taken counts toward that alert and sends
// nothing; a resolved event resolves the key's alert (its pending steps cancelled, and
// with notify_on_resolve one 已恢复 notice to the people called so far) and lets the key
// go. A key whose alert ended another way (acknowledged then resolved, exhausted) is let
// go by the next firing event, which opens a new alert.

// Opener opens an alert through the intake: a send of an event's notice under a route,
// acknowledged along the route's policy.
type Opener interface {
	OpenAlert(ctx context.Context, o Opening) (alertID int64, err error)
}

// Opening is one alert to open: the integration and route it came through, the event,
// and the variables a route's template may take.
type Opening struct {
	Integration string
	Route       Route
	Event       Event
	// Variables are the event's fields by name (title, description, severity, status,
	// source, links, labels, label_<name> and labels.<name>); the intake passes a template those it
	// declares.
	Variables map[string]string
	// Subject and Text are the notice's content when the route names no template.
	Subject, Text string
	// Inhibited, when set, opens the alert inhibited: nobody is notified and it does not
	// escalate until what inhibits it ends.
	Inhibited *Inhibited
}

// Inhibited says which open alert inhibits the alert an event opens, under which rule.
type Inhibited struct {
	RuleID        int64
	RuleName      string
	SourceAlertID int64
}

// Inhibitor is inhibition as the integrations see it (package inhibit).
type Inhibitor interface {
	// Inhibiting returns what inhibits an alert of subject (eventSubject), nil when
	// nothing does.
	Inhibiting(ctx context.Context, subject delivery.Subject) (*Inhibited, error)
	// SourceEnded releases the alerts that the alert id inhibited, now that it ended.
	SourceEnded(ctx context.Context, alertID int64) error
}

// Receive takes a body an integration posted: its events normalised (a body that cannot
// be read is refused, recorded, with a *kernel.FieldError naming the field), then each
// created, deduplicated, resolved, ignored or unrouted, and what became of each
// recorded in the list of what came in. It returns those records in the events' order.
func (d *Gateway) Receive(ctx context.Context, it *Integration, body []byte) ([]Received, error) {
	st := NewStore(d.store.DB())
	now := d.now()
	var mapping *Mapping
	if it.Format == FormatCustom {
		mapping = &Mapping{Fields: it.MappingFields, Values: it.ValueMap}
	}
	events, err := Normalize(it.Format, body, mapping)
	if err != nil {
		rec := []Received{{ReceivedAt: now, Outcome: OutcomeRefused, Reason: reasonOf(err), Body: redactBody(body)}}
		if rerr := st.Record(ctx, it.ID, rec); rerr != nil {
			return nil, rerr
		}
		d.observe(it.Name, OutcomeRefused)
		return rec, err
	}
	routes, err := compileRoutes(it)
	if err != nil {
		return nil, err
	}
	out := make([]Received, len(events))
	for i, ev := range events {
		rec, err := d.receiveOne(ctx, st, it, routes, ev, now)
		if err != nil {
			return nil, err
		}
		out[i] = rec
	}
	if len(out) > 0 {
		// The body once, with the first of its events.
		out[0].Body = redactBody(body)
	}
	if err := st.Record(ctx, it.ID, out); err != nil {
		return nil, err
	}
	for _, r := range out {
		d.observe(it.Name, r.Outcome)
	}
	return out, nil
}

// reasonOf is a refusal's reason as the list of what came in shows it.
func reasonOf(err error) string {
	if fe, ok := errors.AsType[*kernel.FieldError](err); ok {
		return fe.Field + ": " + fe.Text(i18n.Chinese)
	}
	return err.Error()
}

// receiveOne handles one event.
func (d *Gateway) receiveOne(ctx context.Context, st *Inbox, it *Integration, routes []compiledRoute, ev Event, now time.Time) (Received, error) {
	rec := Received{ReceivedAt: now, DedupKey: ev.DedupKey}
	by := audit.System("integration:" + it.Name)
	if ev.Status == StatusResolved {
		alertID, found, err := st.KeyAlert(ctx, it.ID, ev.DedupKey)
		if err != nil {
			return rec, err
		}
		if !found || alertID == nil {
			rec.Outcome, rec.Reason = OutcomeIgnored, i18n.In(i18n.Chinese, "integrations.outcome.no_open_alert")
			return rec, nil
		}
		rec.AlertID = alertID
		res, err := d.alerts.ResolveFromSource(ctx, by, *alertID, it.Name, it.NotifyOnResolve)
		switch {
		case errors.Is(err, alert.ErrAlertEnded), err == nil && res.Already:
			rec.Outcome, rec.Reason = OutcomeIgnored, i18n.In(i18n.Chinese, "integrations.outcome.ended_already")
		case err != nil:
			return rec, err
		default:
			rec.Outcome = OutcomeResolved
			if d.incidents != nil {
				if err := d.incidents.Recovered(ctx, by, *alertID); err != nil {
					return rec, err
				}
			}
			if d.inhibitor != nil {
				// What it inhibited goes on now; the inhibition pass would see to it shortly.
				if err := d.inhibitor.SourceEnded(ctx, *alertID); err != nil {
					d.log.Warn("inbound: release what a recovered alert inhibited", "alert", *alertID, "error", err)
				}
			}
		}
		return rec, st.ReleaseKey(ctx, it.ID, ev.DedupKey)
	}
	for tries := 0; ; tries++ {
		took, alertID, err := st.TakeKey(ctx, it.ID, ev.DedupKey)
		if err != nil {
			return rec, err
		}
		if took {
			break
		}
		rec.Outcome, rec.AlertID = OutcomeDeduplicated, alertID
		if alertID == nil {
			return rec, nil // being opened by a concurrent event of the key
		}
		counted, err := alert.Of(d.store).CountEvent(ctx, *alertID, now)
		if err != nil || counted || tries > 0 {
			return rec, err
		}
		// Its alert has ended: the key opens a new one.
		if err := st.ReleaseKey(ctx, it.ID, ev.DedupKey); err != nil {
			return rec, err
		}
		rec.AlertID = nil
	}
	route := routeFor(it, routes, ev)
	if route == nil {
		rec.Outcome, rec.Reason = OutcomeUnrouted, i18n.In(i18n.Chinese, "integrations.outcome.no_route")
		return rec, st.ReleaseKey(ctx, it.ID, ev.DedupKey)
	}
	o := opening(it, route, ev)
	if d.inhibitor != nil {
		var err error
		if o.Inhibited, err = d.inhibitor.Inhibiting(ctx, eventSubject(it, ev)); err != nil {
			return rec, errors.Join(err, st.ReleaseKey(ctx, it.ID, ev.DedupKey))
		}
	}
	alertID, err := d.open(ctx, o)
	if err != nil {
		if rerr := st.ReleaseKey(ctx, it.ID, ev.DedupKey); rerr != nil {
			return rec, rerr
		}
		if _, ok := errors.AsType[*kernel.FieldError](err); ok {
			rec.Outcome, rec.Reason = OutcomeRefused, reasonOf(err)
			return rec, nil
		}
		return rec, err
	}
	if err := alert.Of(d.store).MarkSource(ctx, alertID, it.Name, ev.DedupKey, ev.Labels, ev.Severity, now); err != nil {
		return rec, err
	}
	rec.Outcome, rec.AlertID = OutcomeCreated, &alertID
	return rec, st.SetKeyAlert(ctx, it.ID, ev.DedupKey, alertID)
}

// open opens an opening's alert: through the incidents when they are kept (grouped,
// or quiet while its key flaps), else on its own through the intake.
func (d *Gateway) open(ctx context.Context, o Opening) (int64, error) {
	loud := func(ctx context.Context) (int64, error) { return d.opener.OpenAlert(ctx, o) }
	// An inhibited alert opens on its own: it neither opens an incident nor joins one,
	// and its release starts its own escalation.
	if d.incidents == nil || o.Inhibited != nil {
		return loud(ctx)
	}
	arr := incident.Arrival{Source: o.Integration, Rules: o.Route.Rules, DedupKey: o.Event.DedupKey, Labels: o.Event.Labels,
		Severity: o.Event.Severity, Subject: o.Subject, Text: o.Text}
	return d.incidents.Open(ctx, arr, loud)
}

// compiledRoute is a route with its matchers ready.
type compiledRoute struct {
	route *Route
	set   delivery.MatcherSet
}

// compileRoutes compiles an integration's routes, in order.
func compileRoutes(it *Integration) ([]compiledRoute, error) {
	out := make([]compiledRoute, len(it.Routes))
	for i := range it.Routes {
		set, err := delivery.CompileMatchers(it.Routes[i].Matchers)
		if err != nil {
			return nil, err
		}
		out[i] = compiledRoute{&it.Routes[i], set}
	}
	return out, nil
}

// routeFor is the first route whose matchers all match the event, else the default
// route; nil when neither.
func routeFor(it *Integration, routes []compiledRoute, ev Event) *Route {
	subject := eventSubject(it, ev)
	for _, r := range routes {
		if r.set.Matches(subject) {
			return r.route
		}
	}
	return it.DefaultRoute
}

// eventSubject is what a route's or an inhibition rule's matchers see of an event:
// its severity, title, integration and labels.
func eventSubject(it *Integration, ev Event) delivery.Subject {
	return AlertSubject(it.Name, ev.Severity, ev.Title, ev.Labels)
}

// AlertSubject is what matchers see of an alert from an integration: its severity,
// title ("" where unknown), integration (source) and labels.
func AlertSubject(source, severity, title string, labels map[string]string) delivery.Subject {
	subject := delivery.Subject{MatchSeverity: severity, MatchTitle: title, MatchSource: source}
	for k, v := range labels {
		subject[LabelPrefix+k] = v
	}
	return subject
}

// severityPriority is the priority of an event's notices when its route names none.
var severityPriority = map[string]string{
	SeverityCritical: string(delivery.High), SeverityWarning: string(delivery.Normal), SeverityInfo: string(delivery.Low)}

// opening is what the intake is asked to open for an event under a route: the route
// with its priority filled in from the severity, the event's variables, and the
// notice's content when the route names no template.
func opening(it *Integration, route *Route, ev Event) Opening {
	r := *route
	if r.Priority == "" {
		r.Priority = cmp.Or(severityPriority[ev.Severity], string(delivery.Normal))
	}
	labels := slices.Sorted(maps.Keys(ev.Labels))
	pairs := make([]string, len(labels))
	vars := map[string]string{"title": ev.Title, "description": ev.Description, "severity": ev.Severity,
		"status": ev.Status, "source": it.Name, "event_count": "1"}
	for i, k := range labels {
		pairs[i] = k + "=" + ev.Labels[k]
		vars["label_"+k] = ev.Labels[k]
		vars["labels."+k] = ev.Labels[k]
	}
	vars["labels"] = strings.Join(pairs, ", ")
	links := make([]string, len(ev.Links))
	for i, l := range ev.Links {
		links[i] = strings.TrimSpace(l.Name + " " + l.URL)
	}
	vars["links"] = strings.Join(links, "\n")
	lang := cmp.Or(it.Language, i18n.Chinese)
	severity := i18n.In(lang, "integrations.severity."+ev.Severity)
	subject := i18n.In(lang, "integrations.notice.subject", "Severity", severity, "Title", ev.Title)
	var text strings.Builder
	text.WriteString(subject)
	for _, line := range []string{ev.Description, vars["labels"], vars["links"]} {
		if line != "" {
			text.WriteString("\n" + line)
		}
	}
	text.WriteString("\n" + i18n.In(lang, "integrations.notice.source", "Source", it.Name))
	return Opening{Integration: it.Name, Route: r, Event: ev, Variables: vars, Subject: subject, Text: text.String()}
}

// secretField finds a JSON string value whose key names a secret: a tool's body may
// carry the credentials of what sent it.
var secretField = regexp.MustCompile(`(?i)("[^"]*(?:password|passwd|secret|token|authorization|api[_-]?key|credential)[^"]*"\s*:\s*)"(?:[^"\\]|\\.)*"`)

// redactBody is a body as the list of what came in keeps it: the values of fields named
// for secrets, and the credentials and queries of its URLs, left out
// (audit.Redact); the rest as it came.
func redactBody(body []byte) string {
	return audit.Redact(secretField.ReplaceAllString(string(body), `$1"***"`))
}
