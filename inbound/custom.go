package inbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode/utf8"

	"herald/kernel"
)

// The event fields a custom integration maps.
const (
	FieldDedupKey    = "dedup_key"
	FieldStatus      = "status"
	FieldSeverity    = "severity"
	FieldTitle       = "title"
	FieldDescription = "description"
	FieldLabels      = "labels"
	FieldLinks       = "links"
)

// MappingFields lists the fields a mapping may fill, the required ones first.
var MappingFields = []string{FieldTitle, FieldDedupKey, FieldStatus, FieldSeverity, FieldDescription, FieldLabels, FieldLinks}

// ValueMapFields lists the fields a value map may translate, and what into: a
// severity word may also say the event is a recovery ("ok" → resolved).
var ValueMapFields = map[string][]string{
	FieldSeverity: slices.Concat(Severities, Statuses),
	FieldStatus:   Statuses,
}

// Bounds of a mapping. Templates run once per field of every posted object, so none
// may loop or grow: Check refuses range, calling or defining templates and the
// functions that can make a long string from a short template (print, printf,
// println, html, js, urlquery, call), and a render stops at maxRendered bytes.
const (
	maxTemplate      = 2000 // characters of one template
	maxRendered      = 16 << 10
	maxValueMapWords = 200 // raw values of one field
)

// refusedFuncs are the builtins a mapping's template may not call.
var refusedFuncs = []string{"print", "printf", "println", "html", "js", "urlquery", "call"}

// Mapping is a custom integration's field mapping and value map.
type Mapping struct {
	// Fields maps an event field to a Go text/template over the posted object, e.g.
	// "{{.host}}::{{.alert_name}}". A key the object lacks renders empty; a nested
	// object or array renders as JSON, so "labels": "{{.tags}}" takes an object whole.
	Fields map[string]string `json:"mapping"`
	// Values maps an event field to the rendered values it translates, e.g.
	// {"severity":{"P1":"critical","ok":"resolved"}}. A value it does not list is read
	// as Herald reads any source's (see severityOf and statusOf).
	Values map[string]map[string]string `json:"value_map"`
}

// Check validates a mapping when an integration is saved: known event fields only,
// templates that compile and stay within bounds, title and dedup_key required, and a
// value map only for a mapped severity or status, into values Herald knows. Errors are
// *kernel.FieldError naming "mapping.<field>" or "value_map.<field>".
func (m Mapping) Check() error {
	_, err := m.compile()
	return err
}

// compile checks the mapping and parses its templates.
func (m Mapping) compile() (map[string]*template.Template, error) {
	names := slices.Sorted(maps.Keys(m.Fields))
	for _, name := range names {
		if !slices.Contains(MappingFields, name) {
			return nil, kernel.Invalid("mapping."+name, "inbound.mapping.field", "Field", name, "Fields", strings.Join(MappingFields, ", "))
		}
	}
	for _, name := range []string{FieldTitle, FieldDedupKey} {
		if strings.TrimSpace(m.Fields[name]) == "" {
			return nil, kernel.Invalid("mapping."+name, "inbound.mapping.required")
		}
	}
	templates := make(map[string]*template.Template, len(names))
	for _, name := range names {
		t, err := compileField(name, m.Fields[name])
		if err != nil {
			return nil, err
		}
		templates[name] = t
	}
	for _, name := range slices.Sorted(maps.Keys(m.Values)) {
		targets, ok := ValueMapFields[name]
		field := "value_map." + name
		switch {
		case !ok:
			return nil, kernel.Invalid(field, "inbound.value_map.field", "Field", name, "Fields", strings.Join(slices.Sorted(maps.Keys(ValueMapFields)), ", "))
		case templates[name] == nil:
			return nil, kernel.Invalid(field, "inbound.value_map.unmapped", "Field", name)
		case len(m.Values[name]) > maxValueMapWords:
			return nil, kernel.Invalid(field, "inbound.value_map.too_many", "Max", maxValueMapWords)
		}
		for _, raw := range slices.Sorted(maps.Keys(m.Values[name])) {
			if to := m.Values[name][raw]; !slices.Contains(targets, to) {
				return nil, kernel.Invalid(field, "inbound.value_map.target", "Value", to, "Targets", strings.Join(targets, ", "))
			}
		}
	}
	return templates, nil
}

// compileField parses one field's template and refuses what could make it loop or grow.
func compileField(name, source string) (*template.Template, error) {
	field := "mapping." + name
	if err := kernel.TooLong(field, "inbound.mapping.too_long", source, maxTemplate); err != nil {
		return nil, err
	}
	t, err := template.New(name).Parse(source)
	if err != nil {
		return nil, kernel.Invalid(field, "inbound.mapping.template", "Err", strings.TrimPrefix(err.Error(), "template: "))
	}
	if len(t.Templates()) > 1 {
		return nil, kernel.Invalid(field, "inbound.mapping.construct", "Name", "define")
	}
	if construct := refusedConstruct(t.Root); construct != "" {
		return nil, kernel.Invalid(field, "inbound.mapping.construct", "Name", construct)
	}
	return t, nil
}

// refusedConstruct names the first construct of node a mapping may not use, or is "".
func refusedConstruct(node parse.Node) string {
	var children []parse.Node
	switch n := node.(type) {
	case *parse.RangeNode:
		return "range"
	case *parse.TemplateNode:
		return "template"
	case *parse.IdentifierNode:
		if slices.Contains(refusedFuncs, n.Ident) {
			return n.Ident
		}
	case *parse.ListNode:
		if n != nil {
			children = n.Nodes
		}
	case *parse.ActionNode:
		children = []parse.Node{n.Pipe}
	case *parse.IfNode:
		children = []parse.Node{n.Pipe, n.List, n.ElseList}
	case *parse.WithNode:
		children = []parse.Node{n.Pipe, n.List, n.ElseList}
	case *parse.PipeNode:
		if n != nil {
			for _, cmd := range n.Cmds {
				children = append(children, cmd)
			}
		}
	case *parse.CommandNode:
		children = n.Args
	case *parse.ChainNode:
		children = []parse.Node{n.Node}
	}
	for _, child := range children {
		if construct := refusedConstruct(child); construct != "" {
			return construct
		}
	}
	return ""
}

// normalize reads a custom integration's body, one object or an array of them,
// through the mapping: each object rendered field by field, then the value map applied.
func (m Mapping) normalize(body []byte) ([]Event, error) {
	templates, err := m.compile()
	if err != nil {
		return nil, err
	}
	items, ats, err := objects(body)
	if err != nil {
		return nil, err
	}
	return normalizeEach(items, ats, FieldDedupKey, func(item json.RawMessage, at string) (Event, error) {
		return m.event(templates, item, at)
	})
}

// event renders one posted object into an event.
func (m Mapping) event(templates map[string]*template.Template, item json.RawMessage, at string) (Event, error) {
	dec := json.NewDecoder(bytes.NewReader(item))
	dec.UseNumber() // a number renders as it was written: 1, not 1e+00
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return Event{}, kernel.Invalid(path(at, "body"), "inbound.json", "Offset", dec.InputOffset())
	}
	data := templateData(raw)
	rendered := make(map[string]string, len(templates))
	for _, name := range slices.Sorted(maps.Keys(templates)) {
		text, err := render(templates[name], data)
		if err != nil {
			return Event{}, kernel.Invalid(path(at, name), "inbound.custom.render", "Err", err.Error())
		}
		rendered[name] = m.translate(name, text)
	}
	for _, name := range []string{FieldTitle, FieldDedupKey} {
		if rendered[name] == "" {
			return Event{}, kernel.Invalid(path(at, name), "inbound.custom.empty", "Template", m.Fields[name])
		}
	}
	e := Event{DedupKey: rendered[FieldDedupKey], Status: StatusFiring, Severity: severityOf(rendered[FieldSeverity]),
		Title: rendered[FieldTitle], Description: rendered[FieldDescription]}
	if status := rendered[FieldStatus]; status != "" {
		var ok bool
		if e.Status, ok = statusOf(status); !ok {
			return Event{}, kernel.Invalid(path(at, FieldStatus), "inbound.status", "Value", status, "Statuses", strings.Join(Statuses, ", "))
		}
	}
	if rendered[FieldSeverity] == StatusResolved {
		e.Status = StatusResolved // a severity the value map reads as a recovery ("ok" → resolved)
	}
	var err error
	if e.Labels, err = labelsOf(rendered[FieldLabels]); err != nil {
		return Event{}, kernel.Invalid(path(at, FieldLabels), "inbound.custom.labels")
	}
	if e.Links, err = linksOf(rendered[FieldLinks]); err != nil {
		return Event{}, kernel.Invalid(path(at, FieldLinks), "inbound.custom.links")
	}
	return e, nil
}

// translate applies the field's value map to its rendered, trimmed text.
func (m Mapping) translate(field, text string) string {
	text = strings.TrimSpace(text)
	if to, ok := m.Values[field][text]; ok {
		return to
	}
	return text
}

// object and array are a posted object's nested values as templates see them: indexed
// as usual, and printed as JSON, so that "{{.tags}}" is the object, not Go's map[…].
type (
	object map[string]any
	array  []any
)

func (o object) String() string { return jsonText(map[string]any(o)) }
func (a array) String() string  { return jsonText([]any(a)) }

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// templateData turns decoded JSON into what templates see: maps and slices as object
// and array, and JSON null left out, so that it renders empty like a missing key.
func templateData(v any) any {
	switch v := v.(type) {
	case map[string]any:
		o := make(object, len(v))
		for k, child := range v {
			if child != nil {
				o[k] = templateData(child)
			}
		}
		return o
	case []any:
		a := make(array, len(v))
		for i, child := range v {
			a[i] = templateData(child)
		}
		return a
	}
	return v
}

// errRenderFull stops a render that reached maxRendered.
var errRenderFull = errors.New("inbound: render reached its cap")

// renderBuffer keeps the first maxRendered bytes a template writes, then stops it.
type renderBuffer struct{ strings.Builder }

// Write implements io.Writer.
func (b *renderBuffer) Write(p []byte) (int, error) {
	if room := maxRendered - b.Len(); len(p) > room {
		b.WriteString(kernel.Truncate(string(p), room))
		return 0, errRenderFull
	}
	return b.Builder.Write(p)
}

// noValue is what text/template prints for a key the data lacks.
const noValue = "<no value>"

// render executes t over data. A key the data lacks renders empty: text/template
// prints "<no value>" for it (with missingkey=zero too, the map's values being
// interfaces), so that text is removed. A render past maxRendered is cut there.
func render(t *template.Template, data any) (string, error) {
	var out renderBuffer
	if err := t.Execute(&out, data); err != nil && !errors.Is(err, errRenderFull) {
		return "", err
	}
	s := strings.ReplaceAll(out.String(), noValue, "")
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s, nil
}

// labelsOf reads rendered labels: a JSON object (a value that is not a string as its
// JSON text) or "name=value,name=value".
func labelsOf(text string) (map[string]string, error) {
	labels := map[string]string{}
	if text == "" {
		return labels, nil
	}
	if strings.HasPrefix(text, "{") {
		var o map[string]any
		if err := json.Unmarshal([]byte(text), &o); err != nil {
			return nil, err
		}
		for k, v := range o {
			if s, ok := v.(string); ok {
				labels[k] = s
			} else if v != nil {
				labels[k] = jsonText(v)
			}
		}
		return labels, nil
	}
	for pair := range strings.SplitSeq(text, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, errors.New("not name=value")
		}
		labels[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return labels, nil
}

// linksOf reads rendered links: a JSON array of {"name","url"}, a JSON object of
// name → URL, or one URL.
func linksOf(text string) ([]Link, error) {
	switch {
	case text == "":
		return nil, nil
	case strings.HasPrefix(text, "["):
		var links []Link
		err := json.Unmarshal([]byte(text), &links)
		return links, err
	case strings.HasPrefix(text, "{"):
		var byName map[string]string
		if err := json.Unmarshal([]byte(text), &byName); err != nil {
			return nil, err
		}
		var links []Link
		for _, name := range slices.Sorted(maps.Keys(byName)) {
			links = append(links, Link{Name: name, URL: byName[name]})
		}
		return links, nil
	}
	return []Link{{URL: text}}, nil
}
