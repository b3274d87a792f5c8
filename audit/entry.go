package audit

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"herald/kernel"
)

// Entry records one state-changing action: who, what, when and from where.
type Entry struct {
	ID         int64
	At         time.Time
	Actor      string
	ActorType  string // "user", "api_key" or "system"
	Action     string
	TargetType string
	TargetID   string
	// Detail is free text: the words of entries written before Params existed, or a
	// value an entry carries as it was given (a request line, a reason typed).
	Detail string
	// Params are the entry's named values as JSON ({"accepted":"2"}): the console renders
	// the action's catalog sentence with them, in the reader's language.
	Params *string
	IP     string
}

// Params are an audit entry's named values.
type Params map[string]string

// WithParams sets the entry's named values, with any URL's credentials and query left
// out (see Redact); empty ones are left out.
func (e Entry) WithParams(p Params) Entry {
	out := Params{}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if p[k] != "" {
			out[k] = Redact(p[k])
		}
	}
	if len(out) == 0 {
		e.Params = nil
		return e
	}
	buf, _ := json.Marshal(out) // a map of strings always marshals
	str := string(buf)
	e.Params = &str
	return e
}

// ParamMap returns the entry's named values; none for an entry written without them.
func (e Entry) ParamMap() Params {
	if e.Params == nil || *e.Params == "" {
		return nil
	}
	var p Params
	if json.Unmarshal([]byte(*e.Params), &p) != nil {
		return nil
	}
	return p
}

// TableName implements gorm's tabler.
func (Entry) TableName() string { return "audit_log" }

// urlInText finds URLs in free text: scheme, credentials, host and path, query, fragment.
// A URL ends at white space or a quote, so one inside JSON ends with its string.
var urlInText = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)([^\s/?#@"']*@)?([^\s?#"']*)(\?[^\s#"']*)?(#[^\s"']*)?`)

// Redact leaves out of every URL in s what may be a secret: the credentials
// (user:password@) and the query and fragment, where webhook and robot URLs carry their
// tokens (?key=…). The audit log is read by viewers, who may not see account settings.
func Redact(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, func(u string) string {
		m := urlInText.FindStringSubmatch(u)
		out := m[1]
		if m[2] != "" {
			out += "***@"
		}
		out += m[3]
		if m[4] != "" || m[5] != "" {
			out += "?***"
		}
		return out
	})
}

// Fit shortens values to the columns' sizes, as Insert does: some come from outside (a
// username tried, a path requested), and an over-long one must not cost the entry.
func (e *Entry) Fit() {
	e.Detail = Redact(e.Detail)
	e.Actor, e.Action, e.TargetType = kernel.Truncate(e.Actor, 100), kernel.Truncate(e.Action, 64), kernel.Truncate(e.TargetType, 32)
	e.TargetID, e.IP = kernel.Truncate(e.TargetID, 64), kernel.Truncate(e.IP, 64)
}
