package inbound

import (
	"encoding/json"
	"slices"
	"strings"

	"herald/kernel"
)

// Herald's own event actions.
const (
	ActionTrigger = "trigger"
	ActionResolve = "resolve"
)

// eventsBody is one event of Herald's own format, for scripts and in-house monitors.
type eventsBody struct {
	EventAction string            `json:"event_action"`
	DedupKey    string            `json:"dedup_key"`
	Severity    string            `json:"severity"`
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Labels      map[string]string `json:"labels"`
	Links       []Link            `json:"links"`
}

// normalizeEvents reads one event or an array of them. Herald documents this format
// itself, so it is read strictly: a severity or a link Herald would not keep is
// refused, telling the script's author, where the other formats make do.
func normalizeEvents(body []byte) ([]Event, error) {
	items, ats, err := objects(body)
	if err != nil {
		return nil, err
	}
	return normalizeEach(items, ats, "dedup_key", func(item json.RawMessage, at string) (Event, error) {
		var b eventsBody
		if err := decode(item, &b, at); err != nil {
			return Event{}, err
		}
		return b.event(at)
	})
}

// event checks the event's action, severity, title and links.
func (b eventsBody) event(at string) (Event, error) {
	e := Event{DedupKey: b.DedupKey, Severity: SeverityWarning, Title: b.Title, Description: b.Description, Labels: b.Labels, Links: b.Links}
	switch b.EventAction {
	case ActionTrigger:
		e.Status = StatusFiring
	case ActionResolve:
		e.Status = StatusResolved
	default:
		return Event{}, kernel.Invalid(path(at, "event_action"), "inbound.events.action", "Value", b.EventAction)
	}
	if b.Severity != "" {
		if !slices.Contains(Severities, b.Severity) {
			return Event{}, kernel.Invalid(path(at, "severity"), "inbound.events.severity", "Value", b.Severity, "Severities", strings.Join(Severities, ", "))
		}
		e.Severity = b.Severity
	}
	// A resolve finds its alert by the dedup key alone.
	if e.Status == StatusFiring && strings.TrimSpace(b.Title) == "" {
		return Event{}, kernel.Invalid(path(at, "title"), "inbound.events.title")
	}
	for i, l := range b.Links {
		if !webAddress(strings.TrimSpace(l.URL)) {
			return Event{}, kernel.Invalid(path(index(path(at, "links"), i), "url"), "inbound.events.link", "Max", MaxLinkURL)
		}
	}
	return e, nil
}
