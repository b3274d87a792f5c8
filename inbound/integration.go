package inbound

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"herald/delivery"
	"herald/directory"
	"herald/incident"
	"herald/kernel"
)

// Integration is a monitoring tool's way into Herald: the format it posts, the token it
// presents (kept as its hash), and the routes that turn its events into alerts.
type Integration struct {
	ID     int64
	Name   string
	Format string
	// TokenHash is the SHA-256 of the token (kernel.HashToken); the token itself is
	// shown once, when the integration is made.
	TokenHash string
	// Routes are tried in order, the first that matches an event wins; DefaultRoute
	// takes an event none matched (nil: such an event is unrouted).
	Routes          Routes `gorm:"serializer:json"`
	DefaultRoute    *Route `gorm:"serializer:json"`
	NotifyOnResolve bool
	// Language is the language of the notice Herald writes for a route without a
	// template (i18n.Chinese or i18n.English).
	Language string
	// MappingFields and ValueMap are a custom format's field mapping and value map.
	MappingFields map[string]string            `gorm:"column:mapping;serializer:json"`
	ValueMap      map[string]map[string]string `gorm:"column:value_map;serializer:json"`
	CreatedBy     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// LastEventAt is when it last received an event (from what came in, not a column:
	// every event would write the one row otherwise).
	LastEventAt *time.Time `gorm:"-"`
}

// TableName implements gorm's tabler.
func (Integration) TableName() string { return "integrations" }

// Routes is an integration's routes, in order.
type Routes []Route

// Route says where the events it matches go: every matcher must match (matchers as
// silences have them, on an event's labels as "label:<name>", its severity, title and
// source); the alert opens under the policy, rendered from the template, through the
// account (or the platform's default account), at the priority, to the recipients.
type Route struct {
	Matchers   []delivery.Matcher `json:"matchers,omitempty"`
	Policy     string             `json:"policy"`
	Template   string             `json:"template,omitempty"`
	Account    string             `json:"account,omitempty"`
	Platform   string             `json:"platform,omitempty"`
	Priority   string             `json:"priority,omitempty"`
	Recipients []string           `json:"recipients,omitempty"`
	// Rules group the route's alerts into incidents, quiet a flapping key and bound the
	// notices an alert sends an hour (package incident).
	incident.Rules
}

// The fields a route's matcher may name beside an event's labels.
const (
	MatchSeverity = "severity"
	MatchTitle    = "title"
	MatchSource   = "source"
	// LabelPrefix leads a matcher on a label: "label:instance".
	LabelPrefix = "label:"
)

// Limits of an integration.
const (
	MaxRoutes          = 50
	MaxMatchers        = 20
	maxNameLen         = 64
	maxRouteRecipients = 100
)

// namePattern is what an integration's name may be: it is a path segment of its push
// URL.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// checkName checks an integration's name.
func checkName(name string) error {
	switch {
	case name == "":
		return kernel.Invalid("name", "integrations.invalid.required")
	case len(name) > maxNameLen:
		return kernel.Invalid("name", "compose.check.max_chars", "Max", maxNameLen)
	case !namePattern.MatchString(name):
		return kernel.Invalid("name", "integrations.invalid.name")
	}
	return nil
}

// checkFormat checks an integration's format.
func checkFormat(format string) error {
	if !slices.Contains(Formats, format) {
		return kernel.Invalid("format", "integrations.invalid.format", "Formats", strings.Join(Formats, ", "))
	}
	return nil
}

// CheckMatcher checks one matcher on an event or an alert an integration opened, named
// field ("routes[0].matchers[1]", "source[0]"): its name (trimmed) is the severity, the
// title, the integration (source) or a label (label:<name>), and its value compiles.
// Routes and inhibition rules both check theirs with it.
func CheckMatcher(field string, m *delivery.Matcher) error {
	m.Name = strings.TrimSpace(m.Name)
	switch name := m.Name; {
	case name == MatchSeverity, name == MatchTitle, name == MatchSource:
	case strings.HasPrefix(name, LabelPrefix) && len(name) > len(LabelPrefix):
	default:
		return kernel.Invalid(field+".name", "integrations.invalid.matcher_name")
	}
	if err := m.Check(); err != nil {
		return kernel.Invalid(field+".value", "integrations.invalid.matcher_value", "Err", err.Error())
	}
	return nil
}

// checkShape checks a route's own fields, field names under prefix ("routes[2]",
// "default_route"); what it names (policy, template, account, people) is checked
// against the store by the service.
func (r *Route) checkShape(prefix string, platforms []string) error {
	if len(r.Matchers) > MaxMatchers {
		return kernel.Invalid(prefix+".matchers", "integrations.invalid.too_many_matchers", "Max", MaxMatchers)
	}
	for i := range r.Matchers {
		if err := CheckMatcher(prefix+".matchers["+strconv.Itoa(i)+"]", &r.Matchers[i]); err != nil {
			return err
		}
	}
	r.Policy = strings.TrimSpace(r.Policy)
	if r.Policy == "" {
		return kernel.Invalid(prefix+".policy", "integrations.invalid.required")
	}
	r.Account, r.Platform = strings.TrimSpace(r.Account), strings.TrimSpace(r.Platform)
	switch {
	case r.Account != "" && r.Platform != "":
		return kernel.Invalid(prefix+".platform", "integrations.invalid.account_and_platform")
	case r.Account == "" && r.Platform == "":
		return kernel.Invalid(prefix+".platform", "integrations.invalid.account_or_platform")
	}
	if r.Platform != "" && !slices.Contains(platforms, r.Platform) {
		return kernel.Invalid(prefix+".platform", "integrations.invalid.platform", "Platforms", strings.Join(platforms, ", "))
	}
	if r.Priority != "" && !delivery.Priority(r.Priority).Valid() {
		return kernel.Invalid(prefix+".priority", "integrations.invalid.priority")
	}
	if len(r.Recipients) > maxRouteRecipients {
		return kernel.Invalid(prefix+".recipients", "compose.check.recipients_too_many", "Max", maxRouteRecipients, "Got", len(r.Recipients))
	}
	for i, ext := range r.Recipients {
		ext = strings.TrimSpace(ext)
		if ext == "" || len(ext) > directory.MaxExternalID {
			return kernel.Invalid(prefix+".recipients["+strconv.Itoa(i)+"]", "compose.check.recipient_id", "Max", directory.MaxExternalID)
		}
		r.Recipients[i] = ext
	}
	return r.Rules.Check(prefix)
}
