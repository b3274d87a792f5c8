package models

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"herald/kernel"
)

// AuditEntry records one state-changing action: who, what, when and from where.
type AuditEntry struct {
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

// AuditParams are an audit entry's named values.
type AuditParams map[string]string

// WithParams sets the entry's named values, with any URL's credentials and query left
// out (see Redact); empty ones are left out.
func (e AuditEntry) WithParams(p AuditParams) AuditEntry {
	out := AuditParams{}
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
func (e AuditEntry) ParamMap() AuditParams {
	if e.Params == nil || *e.Params == "" {
		return nil
	}
	var p AuditParams
	if json.Unmarshal([]byte(*e.Params), &p) != nil {
		return nil
	}
	return p
}

// TableName implements gorm's tabler.
func (AuditEntry) TableName() string { return "audit_log" }

// Audit appends an entry to the audit log.
func (s *Store) Audit(ctx context.Context, e AuditEntry) error {
	if err := insertAudit(kernel.OnTx(s.k.Writer(ctx)), &e); err != nil {
		return fmt.Errorf("models: audit %s: %w", e.Action, err)
	}
	return nil
}

// AuditMany appends several entries in one statement: a bulk change writes one entry per
// thing it changed, so the log answers "who changed E1001, when, from where".
func (s *Store) AuditMany(ctx context.Context, entries []AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	rows := make([]*AuditEntry, len(entries))
	for i := range entries {
		rows[i] = &entries[i]
	}
	if err := insertAudit(kernel.OnTx(s.k.Writer(ctx)), rows...); err != nil {
		return fmt.Errorf("models: audit %d entries: %w", len(entries), err)
	}
	return nil
}

// urlInText finds URLs in free text: scheme, credentials, host and path, query, fragment.
var urlInText = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)([^\s/?#@]*@)?([^\s?#]*)(\?[^\s#]*)?(#\S*)?`)

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

// MaskedConfig is an account's settings as the console and the API show them: every
// URL redacted as the audit log redacts it (Redact), so that a robot's or webhook's
// access_token in a query string is never shown again once stored. Secrets are masked
// apart, by their callers. Sending a masked value back unchanged keeps the stored one
// (KeepMasked).
func MaskedConfig(cfg map[string]string) map[string]string {
	out := make(map[string]string, len(cfg))
	for k, v := range cfg {
		out[k] = Redact(v)
	}
	return out
}

// KeepMasked puts back into cfg each stored setting that cfg holds as it was shown
// (MaskedConfig), so that an edit leaving a masked URL as it was keeps the URL stored.
func KeepMasked(cfg, stored map[string]string) {
	for k, v := range cfg {
		if old, ok := stored[k]; ok && v != old && v == Redact(old) {
			cfg[k] = old
		}
	}
}

// cut shortens values to the columns' sizes: some come from outside (a username tried, a
// path requested), and an over-long one must not cost the entry.
func (e *AuditEntry) cut() {
	e.Detail = Redact(e.Detail)
	e.Actor, e.Action, e.TargetType = truncate(e.Actor, 100), truncate(e.Action, 64), truncate(e.TargetType, 32)
	e.TargetID, e.IP = truncate(e.TargetID, 64), truncate(e.IP, 64)
}
