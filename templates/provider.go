package templates

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"herald/channels"
	"herald/directory"
	"herald/kernel"
)

// A template for SMS and voice calls is sent as the provider's approved template: its
// code (ProviderTemplate) and its parameters in order, each rendered from a Herald
// expression on the template's variables (ProviderParams, "name=expression"). The
// body stays the text the person receives, for the record and the preview.

// providerCode is what a provider template code may be: Alibaba's SMS_… and TTS_…,
// Tencent's numeric ids.
var providerCode = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,64}$`)

// providerParamName is what a provider template's parameter may be called: Alibaba's
// ${name}, Tencent's {1}.
var providerParamName = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// providerParam is one mapped parameter, parsed.
type providerParam struct {
	name string
	tmpl *template.Template
}

// parseProviderParams checks and parses the template's provider code and parameter
// mapping; a problem names provider_template or provider_params[i] (from 0).
func (c *Compiled) parseProviderParams() error {
	t := c.tmpl
	t.ProviderTemplate = strings.TrimSpace(t.ProviderTemplate)
	switch {
	case t.ProviderTemplate == "" && len(t.ProviderParams) > 0:
		return kernel.Invalid("provider_template", "templates.invalid.provider_template_required")
	case t.ProviderTemplate != "" && !providerCode.MatchString(t.ProviderTemplate):
		return kernel.Invalid("provider_template", "templates.invalid.provider_template")
	}
	seen := map[string]bool{}
	c.params = nil
	for i, mapping := range t.ProviderParams {
		field := fmt.Sprintf("provider_params[%d]", i)
		name, expr, _ := strings.Cut(mapping, "=")
		name, expr = strings.TrimSpace(name), strings.TrimSpace(expr)
		switch {
		case !providerParamName.MatchString(name):
			return kernel.Invalid(field, "templates.invalid.provider_param_name")
		case seen[name]:
			return kernel.Invalid(field, "templates.invalid.provider_param_twice", "Name", name)
		case expr == "":
			return kernel.Invalid(field, "templates.invalid.provider_param_unmapped", "Name", name)
		}
		seen[name] = true
		tp, err := c.parse(field, expr)
		if err != nil {
			return err
		}
		if err := checkConstructs(tp.Templates()); err != nil {
			return templateError(field, err)
		}
		c.params = append(c.params, providerParam{name: name, tmpl: tp})
	}
	return nil
}

// RenderParams renders the provider template's parameters for one recipient, in
// order; nil for a template that maps none.
func (c *Compiled) RenderParams(ctx context.Context, platform string, vars map[string]string, p *directory.Recipient) ([]channels.Param, error) {
	if len(c.params) == 0 {
		return nil, nil
	}
	data := c.data(vars, p)
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() { c.running = nil }()
	out := make([]channels.Param, len(c.params))
	for i, pp := range c.params {
		v, err := c.execute(ctx, platform, pp.tmpl, data)
		if err != nil {
			return nil, err
		}
		out[i] = channels.Param{Name: pp.name, Value: v}
	}
	return out, nil
}

// ProviderTemplate is the provider template code a send of the template names ("" for
// none).
func (c *Compiled) ProviderTemplate() string { return c.tmpl.ProviderTemplate }
