package dispatch

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/template"
	"unicode/utf8"

	"herald/models"
)

// maxContentBytes caps a rendered message per platform, below each platform's own limit.
var maxContentBytes = map[string]int{
	"wecom":    2048,
	"tianyuan": 4000,
	"zhaohu":   4000,
	"sandbox":  4000,
	"webhook":  64 << 10,
	"email":    256 << 10,
}

// MaxContentBytes returns the largest rendered message a platform accepts.
func MaxContentBytes(platform string) int {
	if n, ok := maxContentBytes[platform]; ok {
		return n
	}
	return 4000
}

var variableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// recipientVar is the variable that carries the recipient's own fields into a template.
const recipientVar = "recipient"

// Compiled is a parsed template ready to render per recipient. It renders one message at
// a time: its functions charge the render in progress.
type Compiled struct {
	tmpl     *models.Template
	subject  *template.Template
	body     *template.Template
	declared []string

	mu      sync.Mutex
	running *budget // the render in progress, under mu
}

// CompileTemplate parses a template and checks it against its declared variables and
// Herald's limits: every variable it uses must be declared (or be .recipient), it may
// not use what checkConstructs refuses, and rendering with sample values must work
// within the largest platform's cap. Errors are *models.FieldError naming "name",
// "msg_type", "variables", "subject" or "body".
func CompileTemplate(t *models.Template) (*Compiled, error) {
	if !variableName.MatchString(strings.ReplaceAll(t.Name, "-", "_")) {
		return nil, &models.FieldError{Field: "name", Message: "use 1–64 letters, digits, dashes or underscores, starting with a letter"}
	}
	if t.MsgType != "text" && t.MsgType != "markdown" {
		return nil, &models.FieldError{Field: "msg_type", Message: "must be text or markdown"}
	}
	seen := map[string]bool{}
	for _, v := range t.Variables {
		switch {
		case !variableName.MatchString(v):
			return nil, &models.FieldError{Field: "variables", Message: fmt.Sprintf("%q is not a valid variable name (letters, digits, underscores)", v)}
		case v == recipientVar:
			return nil, &models.FieldError{Field: "variables", Message: "recipient is built in and cannot be declared"}
		case seen[v]:
			return nil, &models.FieldError{Field: "variables", Message: fmt.Sprintf("%q is declared twice", v)}
		}
		seen[v] = true
	}
	if strings.TrimSpace(t.Body) == "" {
		return nil, &models.FieldError{Field: "body", Message: "is required"}
	}
	if err := models.CheckText("subject", t.Subject, false); err != nil {
		return nil, err
	}
	if err := models.CheckText("body", t.Body, true); err != nil {
		return nil, err
	}
	c := &Compiled{tmpl: t, declared: slices.Clone(t.Variables)}
	var err error
	if c.subject, err = c.parse("subject", t.Subject); err != nil {
		return nil, err
	}
	if c.body, err = c.parse("body", t.Body); err != nil {
		return nil, err
	}
	for _, tp := range []*template.Template{c.subject, c.body} {
		if err := checkConstructs(tp); err != nil {
			return nil, &models.FieldError{Field: tp.Name(), Message: err.Error()}
		}
	}
	sample := map[string]string{}
	for _, v := range t.Variables {
		sample[v] = "sample"
	}
	if _, _, err := c.Render(context.Background(), "", sample, &models.Recipient{Name: "Sample", ExternalID: "E0000"}); err != nil {
		return nil, err
	}
	return c, nil
}

// parse parses one field with the functions that charge the render in progress.
func (c *Compiled) parse(field, src string) (*template.Template, error) {
	if len(src) > maxTemplateSource {
		return nil, &models.FieldError{Field: field, Message: fmt.Sprintf("must be at most %d bytes", maxTemplateSource)}
	}
	tp, err := template.New(field).Funcs(funcs(func() *budget { return c.running })).Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, &models.FieldError{Field: field, Message: cleanTemplateError(err)}
	}
	return tp, nil
}

// CheckVariables reports the first problem with the variables given for this template:
// a declared one missing, one given that the template does not declare, or one too long.
func (c *Compiled) CheckVariables(vars map[string]string) error {
	for _, v := range c.declared {
		if _, ok := vars[v]; !ok {
			return &models.FieldError{Field: "variables." + v, Message: fmt.Sprintf("is required by template %s", c.tmpl.Name)}
		}
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(c.declared, k) {
			return &models.FieldError{Field: "variables." + k, Message: fmt.Sprintf("is not declared by template %s", c.tmpl.Name)}
		}
		// A value no message could hold is no use, and every function given it pays for its size.
		if len(vars[k]) > maxTextLen {
			return &models.FieldError{Field: "variables." + k, Message: fmt.Sprintf("must be at most %d bytes", maxTextLen)}
		}
	}
	return nil
}

// Render renders subject and body for one recipient on a platform ("" for none in
// particular: the largest platform's cap applies). Each field must fit the platform's
// cap and render within renderTimeout; ctx can abandon a render sooner.
func (c *Compiled) Render(ctx context.Context, platform string, vars map[string]string, p *models.Recipient) (subject, body string, err error) {
	data := make(map[string]any, len(vars)+1)
	for k, v := range vars {
		data[k] = v
	}
	data[recipientVar] = map[string]string{
		"name": p.Name, "external_id": p.ExternalID, "branch": p.Branch, "department": p.Department,
	}
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

// execute renders one field within a fresh budget; c.mu is held.
func (c *Compiled) execute(ctx context.Context, platform string, tp *template.Template, data map[string]any) (string, error) {
	c.running = newBudget(ctx, platform)
	if err := tp.Execute(c.running, data); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("dispatch: render template %s: %w", c.tmpl.Name, ctx.Err())
		}
		msg, ok := limitMessage(err)
		if !ok {
			msg = cleanTemplateError(err)
		}
		return "", &models.FieldError{Field: tp.Name(), Message: msg}
	}
	return c.running.out.String(), nil
}

// MsgType is the template's message type.
func (c *Compiled) MsgType() string { return c.tmpl.MsgType }

// cleanTemplateError shortens text/template's messages to what a template author needs.
func cleanTemplateError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "map has no entry for key "); i >= 0 {
		return "uses undeclared variable " + strings.Trim(msg[i+len("map has no entry for key "):], `"`)
	}
	// "template: body:1:7: executing ..." → "line 1:7: ..."
	for _, prefix := range []string{"template: subject:", "template: body:"} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	return "line " + msg
}

// checkSize refuses content a platform would not accept.
func checkSize(field, platform, who, content string) error {
	if !utf8.ValidString(content) {
		return &models.FieldError{Field: field, Message: "is not valid UTF-8"}
	}
	if n, max := len(content), MaxContentBytes(platform); n > max {
		return &models.FieldError{Field: field, Message: fmt.Sprintf("the message for %s is %d bytes; %s allows %d", who, n, platform, max)}
	}
	return nil
}
