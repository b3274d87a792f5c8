// Package incident is the noise control of the alerts monitoring tools post: an incident
// gathers the alerts of one group key (the values of a route's group_by labels) that come
// within the route's group_window, so that a storm of them escalates once; a dedup key
// that opens and recovers too often is flapping and goes quiet; and a route bounds the
// notices one alert or incident sends an hour. Casebook holds the incidents' queries;
// Coordinator their audited changes and the decisions of the intake. The alerts
// themselves are the alerts' (package alert), which incidents build on.
package incident

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"herald/internal/states"
	"herald/kernel"
)

// Incident states: open → acknowledged → resolved, open → resolved.
const (
	StateOpen         = "open"
	StateAcknowledged = "acknowledged"
	StateResolved     = "resolved"
)

// States lists the incident states in the order pages show them.
var States = []string{StateOpen, StateAcknowledged, StateResolved}

// moves are the moves an incident may make, by the state it leaves: acknowledged by a
// person, resolved by a person or once all its alerts have recovered.
var moves = map[string][]string{
	StateOpen:         {StateAcknowledged, StateResolved},
	StateAcknowledged: {StateResolved},
}

// table is the incident lifecycle.
var table = states.New(States, moves)

// The compare-and-set lists of incident moves.
var (
	// Acknowledgeable are the states an incident may be acknowledged in.
	Acknowledgeable = table.From(StateAcknowledged)
	// Resolvable are the states an incident may be resolved in.
	Resolvable = table.From(StateResolved)
)

// Incident status events, recorded as alerts' are for the API key that opened its first
// alert.
const (
	EventOpened       = "incident.opened"
	EventAcknowledged = "incident.acknowledged"
	EventResolved     = "incident.resolved"
)

// Incident is the alerts of one group key an integration opened within a window.
type Incident struct {
	ID int64
	// Source is the integration; GroupKey the values of the route's group_by labels
	// ("alertname=NodeDown,cluster=sh-core").
	Source   string
	GroupKey string
	// OpenKey is Source and GroupKey while alerts may still join; nil after.
	OpenKey *string
	// Title is its first alert's.
	Title string
	State string
	// AlertID is its first alert, whose escalation is the incident's.
	AlertID        *int64
	AlertCount     int
	StormThreshold int
	// WindowEndsAt is when alerts stop joining it.
	WindowEndsAt   time.Time
	StormAt        *time.Time
	OpenedAt       time.Time
	AcknowledgedBy string
	AcknowledgedAt *time.Time
	ResolvedBy     string
	ResolvedAt     *time.Time
}

// TableName implements gorm's tabler.
func (Incident) TableName() string { return "incidents" }

// CanMoveTo reports whether the incident, in its state, may move to state to.
func (i *Incident) CanMoveTo(to string) bool { return table.Allowed(i.State, to) }

// Rules are a route's noise settings, written into the route's JSON beside its other
// fields.
type Rules struct {
	// GroupBy names the labels whose values make an alert's group key; none: alerts
	// are not grouped.
	GroupBy []string `json:"group_by,omitempty"`
	// GroupWindow is how long after an incident opens alerts of its key join it
	// (DefaultGroupWindow when empty).
	GroupWindow string `json:"group_window,omitempty"`
	// StormThreshold is the number of alerts at which an incident sends its one storm
	// notice; 0: none.
	StormThreshold int `json:"storm_threshold,omitempty"`
	// FlapCount and FlapWindow: a dedup key that opens (and recovers) FlapCount times
	// within FlapWindow is flapping (DefaultFlapCount, DefaultFlapWindow when zero).
	FlapCount  int    `json:"flap_count,omitempty"`
	FlapWindow string `json:"flap_window,omitempty"`
	// MaxNoticesPerHour bounds the notices one alert or incident sends an hour; 0: no
	// bound.
	MaxNoticesPerHour int `json:"max_notices_per_hour,omitempty"`
}

// Defaults and limits of the rules.
const (
	DefaultGroupWindow = 5 * time.Minute
	MinGroupWindow     = 30 * time.Second
	MaxGroupWindow     = 24 * time.Hour
	DefaultFlapCount   = 5
	MinFlapCount       = 2
	MaxFlapCount       = 100
	DefaultFlapWindow  = 30 * time.Minute
	MinFlapWindow      = time.Minute
	MaxFlapWindow      = 24 * time.Hour
	MaxGroupBy         = 10
	MaxStormThreshold  = 100000
	MaxNoticesPerHour  = 10000
	// ListedAlerts is how many of its alerts an incident's notice names; the rest
	// are counted ("及另外 N 条").
	ListedAlerts = 5
)

// Check checks the rules of a route, field names under prefix ("routes[0]"), and trims
// the label names.
func (r *Rules) Check(prefix string) error {
	if len(r.GroupBy) > MaxGroupBy {
		return kernel.Invalid(prefix+".group_by", "incidents.invalid.group_by_too_many", "Max", MaxGroupBy)
	}
	for i, name := range r.GroupBy {
		name = strings.TrimSpace(name)
		if name == "" || len(name) > 128 {
			return kernel.Invalid(prefix+".group_by["+strconv.Itoa(i)+"]", "incidents.invalid.group_by_label")
		}
		r.GroupBy[i] = name
	}
	if len(r.GroupBy) == 0 && (r.GroupWindow != "" || r.StormThreshold != 0) {
		return kernel.Invalid(prefix+".group_by", "incidents.invalid.group_by_empty")
	}
	if _, err := window(r.GroupWindow, DefaultGroupWindow, MinGroupWindow, MaxGroupWindow); err != nil {
		return kernel.Invalid(prefix+".group_window", "incidents.invalid.window", "Min", "30s", "Max", "24h")
	}
	if r.StormThreshold < 0 || r.StormThreshold > MaxStormThreshold {
		return kernel.Invalid(prefix+".storm_threshold", "incidents.invalid.range", "Min", 0, "Max", MaxStormThreshold)
	}
	if r.FlapCount != 0 && (r.FlapCount < MinFlapCount || r.FlapCount > MaxFlapCount) {
		return kernel.Invalid(prefix+".flap_count", "incidents.invalid.range", "Min", MinFlapCount, "Max", MaxFlapCount)
	}
	if _, err := window(r.FlapWindow, DefaultFlapWindow, MinFlapWindow, MaxFlapWindow); err != nil {
		return kernel.Invalid(prefix+".flap_window", "incidents.invalid.window", "Min", "1m", "Max", "24h")
	}
	if r.MaxNoticesPerHour < 0 || r.MaxNoticesPerHour > MaxNoticesPerHour {
		return kernel.Invalid(prefix+".max_notices_per_hour", "incidents.invalid.range", "Min", 0, "Max", MaxNoticesPerHour)
	}
	return nil
}

// errOutOfRange is a window outside its bounds.
var errOutOfRange = errors.New("incident: window out of range")

// window parses a window, def when empty, between lo and hi.
func window(s string, def, lo, hi time.Duration) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < lo || d > hi {
		return 0, errOutOfRange
	}
	return d, nil
}

// groupWindow is the rules' group window (checked by Check).
func (r Rules) groupWindow() time.Duration {
	d, _ := window(r.GroupWindow, DefaultGroupWindow, MinGroupWindow, MaxGroupWindow)
	return d
}

// flapWindow is the rules' flap window (checked by Check).
func (r Rules) flapWindow() time.Duration {
	d, _ := window(r.FlapWindow, DefaultFlapWindow, MinFlapWindow, MaxFlapWindow)
	return d
}

// flapCount is the rules' flap count.
func (r Rules) flapCount() int {
	if r.FlapCount == 0 {
		return DefaultFlapCount
	}
	return r.FlapCount
}

// groupKey is the group key of labels under the rules: each group_by label and its
// value, in the order named.
func (r Rules) groupKey(labels map[string]string) string {
	parts := make([]string, len(r.GroupBy))
	for i, name := range r.GroupBy {
		parts[i] = name + "=" + labels[name]
	}
	return strings.Join(parts, ",")
}
