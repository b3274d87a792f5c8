// Package inbound reads the alerts monitoring tools post to Herald and normalises each
// into one Event: Alertmanager's and Grafana's webhooks, the body of Herald's Zabbix
// media type, Herald's own events format, and any JSON through a custom integration's
// field mapping and value map. It is pure: no storage, no HTTP. The intake stores,
// deduplicates and routes what Normalize returns.
//
// A body is taken whole or refused whole: the first problem found is a
// *kernel.FieldError naming the field by its JSON path (alerts[2].fingerprint), which
// the intake answers with 422 and shows in the integration's event list.
//
// What a person reads (a title, a description, a label's value) is cut to its cap
// rather than refused: an alert at 02:00 must reach someone even when its description
// is long. What identifies or routes an alert (a dedup key, a label's name, how many
// labels or events) is refused when it is out of bounds, since cutting it would merge
// or misroute alerts.
package inbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"herald/kernel"
)

// Formats an integration may take.
const (
	FormatAlertmanager = "alertmanager"
	FormatGrafana      = "grafana"
	FormatZabbix       = "zabbix"
	FormatEvents       = "events"
	FormatCustom       = "custom"
)

// Formats lists every format, in the order the console offers them.
var Formats = []string{FormatAlertmanager, FormatGrafana, FormatZabbix, FormatEvents, FormatCustom}

// An event's status.
const (
	StatusFiring   = "firing"
	StatusResolved = "resolved"
)

// An event's severity.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// Severities lists the severities, most urgent first.
var Severities = []string{SeverityCritical, SeverityWarning, SeverityInfo}

// Statuses lists the statuses.
var Statuses = []string{StatusFiring, StatusResolved}

// Bounds of one body and of one event.
const (
	// MaxEvents is the most events one body may carry.
	MaxEvents = 1000
	// MaxTitle and MaxDescription are the caps, in characters, a title and a
	// description are cut to.
	MaxTitle       = 255
	MaxDescription = 4000
	// MaxDedupKey bounds a dedup key, in characters; a longer one is refused.
	MaxDedupKey = 255
	// MaxLabels bounds an event's labels; MaxLabelName a label's name (both refused
	// past), MaxLabelValue a label's value (cut to).
	MaxLabels     = 100
	MaxLabelName  = 128
	MaxLabelValue = 1024
	// MaxLinks bounds an event's links (the rest are left out); MaxLinkURL a link's
	// address (a longer one is left out, since a cut address leads nowhere).
	MaxLinks   = 20
	MaxLinkURL = 2048
)

// Event is one alert event normalised from any format.
type Event struct {
	DedupKey    string            `json:"dedup_key"`
	Status      string            `json:"status"`   // StatusFiring or StatusResolved
	Severity    string            `json:"severity"` // SeverityCritical, SeverityWarning or SeverityInfo
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Labels      map[string]string `json:"labels"`
	Links       []Link            `json:"links"`
	StartsAt    *time.Time        `json:"starts_at,omitempty"`
	EndsAt      *time.Time        `json:"ends_at,omitempty"`
}

// Link is an address an event points to: the rule that fired, a dashboard, a runbook.
type Link struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// Normalize reads a body posted in format into its events. m is used only for
// FormatCustom (nil otherwise). Bad input is a *kernel.FieldError naming the field by
// its JSON path, e.g. "alerts[2].fingerprint", "event_action", "[3].title"; an unknown
// format is a field error on "format".
func Normalize(format string, body []byte, m *Mapping) ([]Event, error) {
	switch format {
	case FormatAlertmanager:
		return normalizeAlertmanager(body, false)
	case FormatGrafana:
		return normalizeAlertmanager(body, true)
	case FormatZabbix:
		return normalizeZabbix(body)
	case FormatEvents:
		return normalizeEvents(body)
	case FormatCustom:
		if m == nil {
			return nil, kernel.Invalid("mapping", "inbound.mapping.missing")
		}
		return m.normalize(body)
	}
	return nil, kernel.Invalid("format", "inbound.format", "Formats", strings.Join(Formats, ", "))
}

// normalizeEach makes the event of each item of a body with eventOf, then brings it
// within its caps (finish). ats are the items' paths, keyField the body's name for
// the dedup key.
func normalizeEach(items []json.RawMessage, ats []string, keyField string, eventOf func(item json.RawMessage, at string) (Event, error)) ([]Event, error) {
	events := make([]Event, 0, len(items))
	for i, item := range items {
		e, err := eventOf(item, ats[i])
		if err != nil {
			return nil, err
		}
		if err := e.finish(ats[i], keyField); err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return events, nil
}

// finish checks what every format shares and brings an event within its caps: the
// dedup key required, on one line and bounded, text trimmed and cut, labels and links bounded, and
// an end only on a resolved event. at is the path of the event in the body ("alerts[2]",
// "[3]", or "" for a body of one), keyField the body's name for the dedup key.
func (e *Event) finish(at, keyField string) error {
	e.DedupKey = oneLine(e.DedupKey)
	if e.DedupKey == "" {
		return kernel.Invalid(path(at, keyField), "inbound.dedup_key.required")
	}
	if err := kernel.TooLong(path(at, keyField), "inbound.dedup_key.too_long", e.DedupKey, MaxDedupKey); err != nil {
		return err
	}
	e.Title = kernel.TruncateRunes(oneLine(e.Title), MaxTitle)
	e.Description = kernel.TruncateRunes(multiLine(e.Description), MaxDescription)
	labels, err := checkLabels(path(at, "labels"), e.Labels)
	if err != nil {
		return err
	}
	e.Labels = labels
	e.Links = checkLinks(e.Links)
	if e.Status != StatusResolved {
		e.EndsAt = nil
	}
	return nil
}

// checkLabels trims the names and values of labels, refusing too many of them or a
// name empty or too long, and cuts long values. It never returns nil.
func checkLabels(field string, labels map[string]string) (map[string]string, error) {
	if len(labels) > MaxLabels {
		return nil, kernel.Invalid(field, "inbound.labels.too_many", "Count", len(labels), "Max", MaxLabels)
	}
	out := make(map[string]string, len(labels))
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		clean := oneLine(name)
		if clean == "" {
			return nil, kernel.Invalid(field, "inbound.labels.name_empty")
		}
		if err := kernel.TooLong(path(field, name), "inbound.labels.name_too_long", clean, MaxLabelName); err != nil {
			return nil, err
		}
		out[clean] = kernel.TruncateRunes(oneLine(labels[name]), MaxLabelValue)
	}
	return out, nil
}

// checkLinks keeps the links whose address is an absolute http or https URL of
// reasonable length, once each, at most MaxLinks of them; a link without a name is
// named "Link". It never returns nil.
func checkLinks(links []Link) []Link {
	out := []Link{}
	for _, l := range links {
		l.URL = strings.TrimSpace(l.URL)
		if !webAddress(l.URL) || len(out) == MaxLinks || slices.ContainsFunc(out, func(o Link) bool { return o.URL == l.URL }) {
			continue
		}
		if l.Name = kernel.TruncateRunes(oneLine(l.Name), MaxTitle); l.Name == "" {
			l.Name = "Link"
		}
		out = append(out, l)
	}
	return out
}

// webAddress reports whether s is an absolute http or https URL a console may show as
// a link: never javascript: or data:, which a crafted alert could otherwise plant.
func webAddress(s string) bool {
	if s == "" || len(s) > MaxLinkURL {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// oneLine trims s and turns control characters and line breaks into spaces: a title
// or a label is shown on one line.
func oneLine(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s))
}

// multiLine trims s and drops control characters but tabs and line breaks, which
// corrupt logs and some platforms' payloads.
func multiLine(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, s))
}

// severityWords reads the severities monitoring tools write: Prometheus rules'
// customary labels, Zabbix's levels (English and the Chinese frontend's), and a few
// common synonyms. A word not listed is read as warning (see severityOf).
var severityWords = map[string]string{
	"critical": SeverityCritical, "crit": SeverityCritical, "page": SeverityCritical,
	"error": SeverityCritical, "fatal": SeverityCritical, "emergency": SeverityCritical,
	"disaster": SeverityCritical, "high": SeverityCritical, "灾难": SeverityCritical, "严重": SeverityCritical,

	"warning": SeverityWarning, "warn": SeverityWarning, "average": SeverityWarning,
	"medium": SeverityWarning, "一般严重": SeverityWarning, "警告": SeverityWarning,

	"info": SeverityInfo, "information": SeverityInfo, "informational": SeverityInfo,
	"notice": SeverityInfo, "low": SeverityInfo, "none": SeverityInfo,
	"not classified": SeverityInfo, "信息": SeverityInfo, "未分类": SeverityInfo,
}

// severityOf reads a severity as a monitoring tool wrote it, in any case. An empty or
// unknown one is a warning: loud enough to be seen, not loud enough to wake the
// on-call for a word Herald does not know.
func severityOf(raw string) string {
	if s, ok := severityWords[strings.ToLower(strings.TrimSpace(raw))]; ok {
		return s
	}
	return SeverityWarning
}

// statusWords reads the statuses sources write: firing or resolved and their
// customary synonyms (Zabbix's PROBLEM and OK, PagerDuty's trigger and resolve).
var statusWords = map[string]string{
	"firing": StatusFiring, "trigger": StatusFiring, "problem": StatusFiring, "alerting": StatusFiring,
	"resolved": StatusResolved, "resolve": StatusResolved, "ok": StatusResolved,
	"recovery": StatusResolved, "recovered": StatusResolved,
}

// statusOf reads a status in any case; ok is false for one Herald cannot read, which
// is refused rather than guessed, since a wrong guess either misses a page or leaves
// an alert open forever.
func statusOf(raw string) (status string, ok bool) {
	status, ok = statusWords[strings.ToLower(strings.TrimSpace(raw))]
	return status, ok
}

// timeOf reads an RFC 3339 time; the zero time (Alertmanager's "none") and an empty
// string are nil.
func timeOf(field, raw string) (*time.Time, error) {
	if raw = strings.TrimSpace(raw); raw == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return nil, kernel.Invalid(field, "inbound.time", "Value", raw)
	}
	if t.IsZero() || t.Year() <= 1 {
		return nil, nil
	}
	return &t, nil
}

// path joins a JSON path and a field: path("alerts[2]", "fingerprint") is
// "alerts[2].fingerprint", path("", "title") is "title", path("", "[3]") is "[3]".
func path(at, field string) string {
	switch {
	case at == "":
		return field
	case field == "":
		return at
	case strings.HasPrefix(field, "["):
		return at + field
	}
	return at + "." + field
}

// index is the path of element i of the array at at.
func index(at string, i int) string { return fmt.Sprintf("%s[%d]", at, i) }

// decode reads JSON into v, returning a type error as the field error of the field at
// fault under the path at, and a syntax error as the failure of at; a fault of the
// whole body is named "body".
func decode(data []byte, v any, at string) error {
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	field, key, args := at, "inbound.json", []any{"Offset", int64(0)}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		field, key, args = path(at, te.Field), "inbound.type."+kindWord(te.Type), nil
	} else if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		args = []any{"Offset", se.Offset}
	}
	if field == "" {
		field = "body"
	}
	return kernel.Invalid(field, key, args...)
}

// kindWord names what a Go type reads from JSON, for the message saying what a field
// should have been.
func kindWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	}
	return "object"
}

// objects reads a body that is one JSON object or an array of at most MaxEvents of
// them, returning each object with its path ("" for a body of one, "[3]" in an array).
func objects(body []byte) (items []json.RawMessage, at []string, err error) {
	if !json.Valid(body) {
		return nil, nil, decode(body, new(any), "")
	}
	switch trimmed := bytes.TrimSpace(body); trimmed[0] {
	case '{':
		return []json.RawMessage{trimmed}, []string{""}, nil
	case '[':
		if err := decode(trimmed, &items, ""); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, kernel.Invalid("body", "inbound.body_shape")
	}
	if err := checkCount("", len(items)); err != nil {
		return nil, nil, err
	}
	at = make([]string, len(items))
	for i, item := range items {
		if at[i] = index("", i); item[0] != '{' {
			return nil, nil, kernel.Invalid(at[i], "inbound.type.object")
		}
	}
	return items, at, nil
}

// checkCount refuses an array at at of more than MaxEvents events, naming the first
// one past the limit.
func checkCount(at string, n int) error {
	if n > MaxEvents {
		return kernel.Invalid(index(at, MaxEvents), "inbound.too_many", "Count", n, "Max", MaxEvents)
	}
	return nil
}
