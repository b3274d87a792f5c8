package templates

import (
	"context"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"unicode/utf8"

	"herald/channels"
	"herald/directory"
	"herald/i18n"
	"herald/kernel"
)

var variableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// fieldVariable is a variable that is one field of a group: "labels.instance" renders
// as {{.labels.instance}} (an alert's labels, each its own variable).
var fieldVariable = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]{0,63})\.([A-Za-z_][A-Za-z0-9_]{0,63})$`)

// recipientVar is the variable that carries the recipient's own fields into a template.
const recipientVar = "recipient"

// Compiled is a parsed template ready to render per recipient. It renders one message at
// a time: its functions charge the render in progress.
type Compiled struct {
	tmpl    *Template
	subject *template.Template
	body    *template.Template
	// html is the HTML alternative (nil without one), parsed with html/template: every
	// value is escaped for where it lands (text, attribute, URL, script), so a variable
	// cannot add markup, an event handler or a javascript: link.
	html     *htmltemplate.Template
	declared []TemplateVariable
	// params are the provider template's parameters, parsed (provider.go).
	params []providerParam

	mu      sync.Mutex
	running *budget // the render in progress, under mu
}

// CompileTemplate parses a template and checks it against its declared variables and
// Herald's limits: every variable it uses must be declared (or be .recipient), it may
// not use what checkConstructs refuses, and rendering with sample values must work
// within the largest platform's cap. Errors are *kernel.FieldError naming "name",
// "msg_type", "variables", "subject" or "body".
func CompileTemplate(t *Template) (*Compiled, error) {
	if !variableName.MatchString(strings.ReplaceAll(t.Name, "-", "_")) {
		return nil, kernel.Invalid("name", "compose.render.name")
	}
	if t.MsgType != "text" && t.MsgType != "markdown" {
		return nil, kernel.Invalid("msg_type", "compose.render.msg_type")
	}
	seen, groups := map[string]bool{}, map[string]bool{}
	for _, v := range t.Vars() {
		group := ""
		if m := fieldVariable.FindStringSubmatch(v.Name); m != nil {
			group = m[1]
		}
		switch {
		case !variableName.MatchString(v.Name) && group == "":
			return nil, kernel.Invalid("variables", "compose.render.variable_name", "Name", strconv.Quote(v.Name))
		case v.Name == recipientVar, group == recipientVar:
			return nil, kernel.Invalid("variables", "compose.render.variable_builtin")
		case seen[v.Name]:
			return nil, kernel.Invalid("variables", "compose.render.variable_twice", "Name", strconv.Quote(v.Name))
		}
		seen[v.Name] = true
		if group != "" {
			groups[group] = true
		}
	}
	for g := range groups {
		if seen[g] {
			// {{.labels}} cannot be both a value and the group of labels.x.
			return nil, kernel.Invalid("variables", "compose.render.variable_twice", "Name", strconv.Quote(g))
		}
	}
	if strings.TrimSpace(t.Body) == "" {
		return nil, kernel.Invalid("body", "compose.render.required")
	}
	if err := kernel.CheckText("subject", t.Subject, false); err != nil {
		return nil, err
	}
	if err := kernel.CheckText("body", t.Body, true); err != nil {
		return nil, err
	}
	if err := kernel.CheckText("html", t.HTML, true); err != nil {
		return nil, err
	}
	c := &Compiled{tmpl: t, declared: t.Vars()}
	var err error
	if c.subject, err = c.parse("subject", t.Subject); err != nil {
		return nil, err
	}
	if c.body, err = c.parse("body", t.Body); err != nil {
		return nil, err
	}
	for _, tp := range []*template.Template{c.subject, c.body} {
		if err := checkConstructs(tp.Templates()); err != nil {
			return nil, templateError(tp.Name(), err)
		}
	}
	if strings.TrimSpace(t.HTML) != "" {
		if c.html, err = c.parseHTML(t.HTML); err != nil {
			return nil, err
		}
		if err := checkConstructs(c.html.Templates()); err != nil {
			return nil, templateError("html", err)
		}
	}
	if err := c.parseProviderParams(); err != nil {
		return nil, err
	}
	sample := map[string]string{}
	for _, v := range t.VariableNames() {
		sample[v] = "sample"
	}
	sampleRecipient := &directory.Recipient{Name: "Sample", ExternalID: "E0000"}
	if _, _, err := c.Render(context.Background(), "", sample, sampleRecipient); err != nil {
		return nil, err
	}
	if _, err := c.RenderHTML(context.Background(), "", sample, sampleRecipient); err != nil {
		return nil, err
	}
	if _, err := c.RenderParams(context.Background(), "", sample, sampleRecipient); err != nil {
		return nil, err
	}
	return c, nil
}

// parse parses one field with the functions that charge the render in progress.
func (c *Compiled) parse(field, src string) (*template.Template, error) {
	if len(src) > maxTemplateSource {
		return nil, kernel.Invalid(field, "compose.check.max_bytes", "Max", maxTemplateSource)
	}
	tp, err := template.New(field).Funcs(funcs(func() *budget { return c.running })).Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, templateError(field, err)
	}
	return tp, nil
}

// parseHTML parses the HTML alternative as parse does the other fields, with
// html/template.
func (c *Compiled) parseHTML(src string) (*htmltemplate.Template, error) {
	if len(src) > maxTemplateSource {
		return nil, kernel.Invalid("html", "compose.check.max_bytes", "Max", maxTemplateSource)
	}
	tp, err := htmltemplate.New("html").Funcs(htmltemplate.FuncMap(funcs(func() *budget { return c.running }))).Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, templateError("html", err)
	}
	return tp, nil
}

// CheckVariables reports the first problem with the variables given for this template:
// a declared one missing or blank (empty or only spaces) unless the template marks it
// optional, one given that the template does not declare, or one too long. The console
// and the API both send through it, so both refuse alike, naming variables.<name>.
func (c *Compiled) CheckVariables(vars map[string]string) error {
	for _, v := range c.declared {
		value, ok := vars[v.Name]
		switch {
		case v.Optional:
		case !ok:
			return kernel.Invalid("variables."+v.Name, "compose.render.variable_required", "Template", c.tmpl.Name)
		case strings.TrimSpace(value) == "":
			return kernel.Invalid("variables."+v.Name, "compose.render.variable_blank", "Template", c.tmpl.Name)
		}
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.ContainsFunc(c.declared, func(v TemplateVariable) bool { return v.Name == k }) {
			return kernel.Invalid("variables."+k, "compose.render.variable_undeclared", "Template", c.tmpl.Name)
		}
		// A value no message could hold is no use, and every function given it pays for its size.
		if len(vars[k]) > MaxTextLen {
			return kernel.Invalid("variables."+k, "compose.check.max_bytes", "Max", MaxTextLen)
		}
	}
	return nil
}

// Render renders subject and body for one recipient on a platform ("" for none in
// particular: the largest platform's cap applies). Each field must fit the platform's
// cap and render within renderTimeout; ctx can abandon a render sooner.
func (c *Compiled) Render(ctx context.Context, platform string, vars map[string]string, p *directory.Recipient) (subject, body string, err error) {
	data := c.data(vars, p)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() { c.running = nil }()
	if subject, err = c.execute(ctx, platform, c.subject, data); err != nil {
		return "", "", err
	}
	if body, err = c.execute(ctx, platform, c.body, data); err != nil {
		return "", "", err
	}
	return subject, body, nil
}

// data is what the template renders with: the variables and the recipient's own fields,
// as given (the HTML alternative escapes them by context: html/template). An optional
// variable not given renders empty.
func (c *Compiled) data(vars map[string]string, p *directory.Recipient) map[string]any {
	data := make(map[string]any, len(vars)+len(c.declared)+1)
	set := func(k, v string) {
		m := fieldVariable.FindStringSubmatch(k)
		if m == nil {
			data[k] = v
			return
		}
		group, _ := data[m[1]].(map[string]string)
		if group == nil {
			group = map[string]string{}
			data[m[1]] = group
		}
		group[m[2]] = v
	}
	for _, v := range c.declared {
		set(v.Name, "")
	}
	for k, v := range vars {
		set(k, v)
	}
	data[recipientVar] = map[string]string{
		"name": p.Name, "external_id": p.ExternalID, "branch": p.Branch, "department": p.Department,
	}
	return data
}

// Template is the template c was compiled from.
func (c *Compiled) Template() *Template { return c.tmpl }

// HasHTML reports whether the template has an HTML alternative.
func (c *Compiled) HasHTML() bool { return c.html != nil }

// RenderHTML renders the HTML alternative for one recipient ("" without one). The
// variables' values and the recipient's fields are escaped by html/template for the
// context each lands in, so what a caller sends shows as text: it cannot add markup,
// leave a quoted or unquoted attribute, or make a link run script.
func (c *Compiled) RenderHTML(ctx context.Context, platform string, vars map[string]string, p *directory.Recipient) (string, error) {
	if c.html == nil {
		return "", nil
	}
	data := c.data(vars, p)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() { c.running = nil }()
	return c.execute(ctx, platform, c.html, data)
}

// executer is a parsed field: a text/template or an html/template one.
type executer interface {
	Execute(w io.Writer, data any) error
	Name() string
}

// execute renders one field within a fresh budget; c.mu is held.
func (c *Compiled) execute(ctx context.Context, platform string, tp executer, data map[string]any) (string, error) {
	c.running = newBudget(ctx, platform)
	if err := tp.Execute(c.running, data); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("templates: render template %s: %w", c.tmpl.Name, ctx.Err())
		}
		return "", templateError(tp.Name(), err)
	}
	return c.running.out.String(), nil
}

// MsgType is the template's message type.
func (c *Compiled) MsgType() string { return c.tmpl.MsgType }

// templateError is the validation error of a template field that failed to parse, to
// pass Herald's limits (template_limits.go) or to render. An error that already is a
// *kernel.FieldError keeps its message under field; a limit's message is its own
// (keyed when the limit error carries a catalog message, see keyedError); what Go's
// text/template reports is shortened to what a template author needs: the position
// and text/template's own words.
func templateError(field string, err error) *kernel.FieldError {
	var fe *kernel.FieldError
	if errors.As(err, &fe) {
		out := *fe
		out.Field = field
		return &out
	}
	var ke keyedError
	if errors.As(err, &ke) {
		m := ke.Msg()
		return kernel.Invalid(field, m.ID, m.Args...)
	}
	if msg, ok := limitMessage(err); ok {
		return kernel.Invalid(field, "compose.render.limit", "Detail", msg)
	}
	msg := err.Error()
	if i := strings.Index(msg, "map has no entry for key "); i >= 0 {
		return kernel.Invalid(field, "compose.render.undeclared", "Name", strings.Trim(msg[i+len("map has no entry for key "):], `"`))
	}
	// "template: body:1:7: executing ..." → line 1, column 7, "executing ..."
	for _, prefix := range []string{"template: subject:", "template: body:", "template: html:", "template: " + field + ":"} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	pos, detail, ok := strings.Cut(msg, ": ")
	if !ok {
		return kernel.Invalid(field, "compose.render.limit", "Detail", msg)
	}
	problem := i18n.M(parserProblem(detail))
	if line, col, ok := strings.Cut(pos, ":"); ok {
		return kernel.Invalid(field, "compose.render.syntax_at", "Line", line, "Col", col, "Problem", problem, "Detail", detail)
	}
	return kernel.Invalid(field, "compose.render.syntax_line", "Line", pos, "Problem", problem, "Detail", detail)
}

// parserProblems name, in the catalogs, what text/template reports, so that a template's
// author reads the problem in their language; the parser's own words follow as a detail.
// The first whose text the report contains applies.
var parserProblems = []struct{ contains, key string }{
	{"unexpected EOF", "compose.render.problem.eof"},
	{"unclosed action", "compose.render.problem.unclosed"},
	{"unexpected {{end}}", "compose.render.problem.end"},
	{"not defined", "compose.render.problem.function"},
	{"executing ", "compose.render.problem.render"},
	{"unexpected ", "compose.render.problem.unexpected"},
}

// parserProblem is the catalog key of what text/template reported.
func parserProblem(detail string) string {
	for _, p := range parserProblems {
		if strings.Contains(detail, p.contains) {
			return p.key
		}
	}
	return "compose.render.problem.invalid"
}

// keyedError is an error that carries its message as a catalog message, so that a
// template's author reads it in their own language (a limit of template_limits.go can
// implement it).
type keyedError interface {
	error
	Msg() i18n.Msg
}

// CheckSize refuses content a platform would not accept, counted as the platform
// counts it (channels.Cap, bytes or characters) and as the adapter sends it (WeCom
// puts the title into the text; see channels.CountedContent).
func CheckSize(field, platform, who string, m channels.Message) error {
	if !utf8.ValidString(m.Content) {
		return kernel.Invalid(field, "compose.render.utf8")
	}
	limit := channels.Cap(platform)
	if n := limit.Len(channels.CountedContent(platform, m)); n > limit.Max {
		return kernel.Invalid(field, "compose.render.too_big_"+string(limit.Unit), "Recipient", who, "Size", n, "Platform", platform, "Max", limit.Max)
	}
	return nil
}

// MaxTextLen is the most bytes a request's text, or a template variable's value, may
// hold: more than any platform takes.
const MaxTextLen = 64 << 10
