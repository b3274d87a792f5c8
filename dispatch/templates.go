package dispatch

import (
	"context"
	"strconv"
	"strings"

	"herald/audit"
	"herald/models"
	"herald/templates"
)

// TemplateInput is a template as the console's editor and the API give it.
type TemplateInput struct {
	Name        string
	DisplayName string
	MsgType     string // "" is text
	Subject     string
	Body        string
	HTML        string
	// Variables are the declared variables; one ending in templates.OptionalMark may be
	// left blank.
	Variables []string
	// Fallback is the chain of platforms, comma-separated, as ParseFallback reads it.
	Fallback string
	// Digest is the digest of sends that name none (nil: none).
	Digest *DigestRequest
	// Rerender, on an edit, renders the template's scheduled messages again from the
	// new version, but for those of batches approved or awaiting approval, which keep
	// their content; false keeps the content (and version) they were created with.
	Rerender bool
}

// CheckTemplate validates a template as saving does: its name, type, variables and
// text compile (CompileTemplate), its fallback chain and its display name. Errors are
// *kernel.FieldError.
func CheckTemplate(in TemplateInput) (*templates.Template, error) {
	t := &templates.Template{Name: strings.TrimSpace(in.Name), DisplayName: in.DisplayName, MsgType: in.MsgType,
		Subject: in.Subject, Body: in.Body, HTML: in.HTML, Variables: templates.StringList(in.Variables)}
	if t.MsgType == "" {
		t.MsgType = "text"
	}
	var err error
	if t.Fallback, err = ParseFallback(in.Fallback); err != nil {
		return nil, err
	}
	if t.Digest, err = ParseTemplateDigest(in.Digest); err != nil {
		return nil, err
	}
	if _, err := templates.CompileTemplate(t); err != nil {
		return nil, err
	}
	if err := t.CheckDisplayName(); err != nil {
		return nil, err
	}
	return t, nil
}

// CreateTemplate saves a new template, audited as template.create. A validation
// failure (a name in use included) is a *kernel.FieldError and writes nothing.
func (d *Dispatcher) CreateTemplate(ctx context.Context, by audit.Actor, in TemplateInput) (*templates.Template, error) {
	t, err := CheckTemplate(in)
	if err != nil {
		return nil, err
	}
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		if err := tx.Templates().CreateTemplate(ctx, t); err != nil {
			return err
		}
		if _, err := tx.Templates().AddTemplateVersion(ctx, t, by.Name); err != nil {
			return err
		}
		ch.Audit("template.create", "template", t.Name, TemplateParams(t))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// UpdateTemplate replaces the template called name (which may rename it), audited as
// template.update with what changed. kernel.ErrNotFound: no such template.
func (d *Dispatcher) UpdateTemplate(ctx context.Context, by audit.Actor, name string, in TemplateInput) (*templates.Template, error) {
	t, err := CheckTemplate(in)
	if err != nil {
		return nil, err
	}
	err = d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		old, err := tx.Templates().TemplateByName(ctx, name)
		if err != nil {
			return err
		}
		if err := tx.Templates().UpdateTemplate(ctx, name, t); err != nil {
			return err
		}
		if _, err := tx.Templates().AddTemplateVersion(ctx, t, by.Name); err != nil {
			return err
		}
		p := TemplateParams(t)
		if err := d.settleWaiting(ctx, tx, ch, t, in.Rerender); err != nil {
			return err
		}
		p["changed"] = strings.Join(templateChanges(old, t), ", ")
		if old.Name != t.Name {
			p["old_name"] = old.Name
		}
		ch.Audit("template.update", "template", t.Name, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// DeleteTemplate removes a template, audited as template.delete. Messages already
// rendered from it are unaffected. kernel.ErrNotFound: no such template.
func (d *Dispatcher) DeleteTemplate(ctx context.Context, by audit.Actor, name string) error {
	return d.change(ctx, by, func(tx *models.Store, ch *audit.Change) error {
		old, err := tx.Templates().TemplateByName(ctx, name)
		if err != nil {
			return err
		}
		if err := tx.Templates().DeleteTemplate(ctx, name); err != nil {
			return err
		}
		ch.Audit("template.delete", "template", name, TemplateParams(old))
		return nil
	})
}

// TemplateParams name a template for its audit sentence.
func TemplateParams(t *templates.Template) audit.Params {
	return audit.Params{"name": t.Name, "display_name": t.DisplayName, "msg_type": t.MsgType,
		"variables": strings.Join(t.Variables, ", "), "version": strconv.Itoa(t.Version)}
}

// templateChanges lists the fields of a template an update changed.
func templateChanges(old, now *templates.Template) []string {
	var out []string
	for _, f := range []struct {
		name     string
		was, now string
	}{
		{"name", old.Name, now.Name}, {"display_name", old.DisplayName, now.DisplayName}, {"msg_type", old.MsgType, now.MsgType},
		{"subject", old.Subject, now.Subject}, {"body", old.Body, now.Body}, {"html", old.HTML, now.HTML},
		{"variables", strings.Join(old.Variables, ","), strings.Join(now.Variables, ",")}, {"fallback", old.Fallback, now.Fallback},
		{"digest", old.Digest, now.Digest},
	} {
		if f.was != f.now {
			out = append(out, f.name)
		}
	}
	return out
}
