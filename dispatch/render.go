package dispatch

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"unicode/utf8"

	"herald/models"
)

// funcs is the whole function set templates may use beyond text/template's builtins.
// Variables are plain strings, so nothing here can reach outside the message.
var funcs = template.FuncMap{
	"upper": strings.ToUpper,
	"lower": strings.ToLower,
	"trim":  strings.TrimSpace,
	"default": func(def, v string) string {
		if v == "" {
			return def
		}
		return v
	},
}

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

// Compiled is a parsed template ready to render per recipient.
type Compiled struct {
	tmpl     *models.Template
	subject  *template.Template
	body     *template.Template
	declared []string
}

// CompileTemplate parses a template and checks it against its declared variables:
// every variable it uses must be declared (or be .recipient), and rendering with
// sample values must work. Errors are *models.FieldError naming "name", "msg_type",
// "variables", "subject" or "body".
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
	c := &Compiled{tmpl: t, declared: slices.Clone(t.Variables)}
	var err error
	if c.subject, err = parse("subject", t.Subject); err != nil {
		return nil, err
	}
	if c.body, err = parse("body", t.Body); err != nil {
		return nil, err
	}
	sample := map[string]string{}
	for _, v := range t.Variables {
		sample[v] = "sample"
	}
	if _, _, err := c.Render(sample, &models.Recipient{Name: "Sample", ExternalID: "E0000"}); err != nil {
		return nil, err
	}
	return c, nil
}

func parse(field, src string) (*template.Template, error) {
	tp, err := template.New(field).Funcs(funcs).Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, &models.FieldError{Field: field, Message: cleanTemplateError(err)}
	}
	return tp, nil
}

// CheckVariables reports the first problem with the variables given for this template:
// a declared one missing, or one given that the template does not declare.
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
	}
	return nil
}

// Render renders subject and body for one recipient.
func (c *Compiled) Render(vars map[string]string, p *models.Recipient) (subject, body string, err error) {
	data := make(map[string]any, len(vars)+1)
	for k, v := range vars {
		data[k] = v
	}
	data[recipientVar] = map[string]string{
		"name": p.Name, "external_id": p.ExternalID, "branch": p.Branch, "department": p.Department,
	}
	var buf bytes.Buffer
	if err := c.subject.Execute(&buf, data); err != nil {
		return "", "", &models.FieldError{Field: "subject", Message: cleanTemplateError(err)}
	}
	subject = buf.String()
	buf.Reset()
	if err := c.body.Execute(&buf, data); err != nil {
		return "", "", &models.FieldError{Field: "body", Message: cleanTemplateError(err)}
	}
	return subject, buf.String(), nil
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
