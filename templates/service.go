package templates

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"herald/audit"
	"herald/kernel"
)

// Editor saves templates and their versions: each change validated, then written with
// its audit entry in one transaction (audit.Run).
type Editor struct {
	store *Library
	// waiting settles the scheduled messages of a template saved as a new version; nil:
	// they keep their content.
	waiting Waiting
	// clock is the clock; nil means kernel.Now.
	clock func() time.Time
}

// Waiting is what saving a template asks of the messages: those of it still waiting to
// be sent, rendered again from the new version (rerender) or left as they were, in the
// saving transaction (tx).
type Waiting interface {
	Settle(ctx context.Context, tx *kernel.DB, ch *audit.Change, t *Template, rerender bool) error
}

// NewService builds the templates' service on store; waiting settles the waiting
// messages of a saved template (nil: none is touched), clock is the clock (nil:
// kernel.Now).
func NewService(store *Library, waiting Waiting, clock func() time.Time) *Editor {
	return &Editor{store: store, waiting: waiting, clock: clock}
}

// change runs fn with a store bound to one transaction and writes the audit entries fn
// recorded in it (audit.Run).
func (d *Editor) change(ctx context.Context, by audit.Actor, fn func(tx *Library, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.k, by, d.store.On, fn)
}

// now is the service's clock, in UTC.
func (d *Editor) now() time.Time { return kernel.Clock(d.clock).Now() }

// settle hands the waiting messages of t, saved in tx, to the Waiting.
func (d *Editor) settle(ctx context.Context, tx *Library, ch *audit.Change, t *Template, rerender bool) error {
	if d.waiting == nil {
		return nil
	}
	return d.waiting.Settle(ctx, tx.k, ch, t, rerender)
}

// TemplateInput is a template as the console's editor and the API give it.
type TemplateInput struct {
	Name        string
	DisplayName string
	MsgType     string // "" is text
	Subject     string
	Body        string
	HTML        string
	// Variables are the declared variables; one ending in OptionalMark may be
	// left blank.
	Variables []string
	// Fallback is the chain of platforms, comma-separated, as ParseFallback reads it.
	Fallback string
	// Digest is the digest of sends that name none (nil: none).
	Digest *DigestRequest
	// ProviderTemplate and ProviderParams are the provider template an SMS or a call
	// is sent as and its parameters' mapping (Template).
	ProviderTemplate string
	ProviderParams   []string
	// Rerender, on an edit, renders the template's scheduled messages again from the
	// new version, but for those of batches approved or awaiting approval, which keep
	// their content; false keeps the content (and version) they were created with.
	Rerender bool
}

// CheckTemplate validates a template as saving does: its name, type, variables and
// text compile (CompileTemplate), its fallback chain and its display name. Errors are
// *kernel.FieldError. The subject, body and HTML come back with their line breaks as
// "\n" (see lineFeeds).
func CheckTemplate(in TemplateInput) (*Template, error) {
	t := &Template{Name: strings.TrimSpace(in.Name), DisplayName: in.DisplayName, MsgType: in.MsgType,
		Subject: lineFeeds(in.Subject), Body: lineFeeds(in.Body), HTML: lineFeeds(in.HTML), Variables: StringList(in.Variables),
		ProviderTemplate: in.ProviderTemplate, ProviderParams: StringList(in.ProviderParams)}
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
	if _, err := CompileTemplate(t); err != nil {
		return nil, err
	}
	if err := t.CheckDisplayName(); err != nil {
		return nil, err
	}
	return t, nil
}

// crlf turns "\r\n" and a lone "\r" into "\n".
var crlf = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// lineFeeds is text with every line break a "\n": browsers send a textarea's lines
// ending in "\r\n", which would make a version differ from its twin on every line and
// carry "\r" to the platforms. Migration 00046 did the same to the templates stored
// before.
func lineFeeds(text string) string { return crlf.Replace(text) }

// CreateTemplate saves a new template, audited as template.create. A validation
// failure (a name in use included) is a *kernel.FieldError and writes nothing.
func (d *Editor) CreateTemplate(ctx context.Context, by audit.Actor, in TemplateInput) (*Template, error) {
	t, err := CheckTemplate(in)
	if err != nil {
		return nil, err
	}
	err = d.change(ctx, by, func(tx *Library, ch *audit.Change) error {
		if err := tx.CreateTemplate(ctx, t); err != nil {
			return err
		}
		if _, err := tx.AddTemplateVersion(ctx, t, by.Name); err != nil {
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
func (d *Editor) UpdateTemplate(ctx context.Context, by audit.Actor, name string, in TemplateInput) (*Template, error) {
	t, err := CheckTemplate(in)
	if err != nil {
		return nil, err
	}
	err = d.change(ctx, by, func(tx *Library, ch *audit.Change) error {
		old, err := tx.TemplateByName(ctx, name)
		if err != nil {
			return err
		}
		if err := tx.UpdateTemplate(ctx, name, t); err != nil {
			return err
		}
		if _, err := tx.AddTemplateVersion(ctx, t, by.Name); err != nil {
			return err
		}
		p := TemplateParams(t)
		if err := d.settle(ctx, tx, ch, t, in.Rerender); err != nil {
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
func (d *Editor) DeleteTemplate(ctx context.Context, by audit.Actor, name string) error {
	return d.change(ctx, by, func(tx *Library, ch *audit.Change) error {
		old, err := tx.TemplateByName(ctx, name)
		if err != nil {
			return err
		}
		if err := tx.DeleteTemplate(ctx, name); err != nil {
			return err
		}
		ch.Audit("template.delete", "template", name, TemplateParams(old))
		return nil
	})
}

// TemplateParams name a template for its audit sentence.
func TemplateParams(t *Template) audit.Params {
	return audit.Params{"name": t.Name, "display_name": t.DisplayName, "msg_type": t.MsgType,
		"variables": strings.Join(t.Variables, ", "), "version": strconv.Itoa(t.Version)}
}

// templateChanges lists the fields of a template an update changed.
func templateChanges(old, now *Template) []string {
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

// RetireTemplateVersion retires version n of the template called name, audited as
// template.version_retire: a send can no longer pin it (a field error on
// template_version), nor a rollback restore it; messages rendered from it already keep
// their content. The current version cannot be retired (save or roll back to another
// first), nor one retired already: field errors on version, as is an unknown version.
// kernel.ErrNotFound: no such template.
func (d *Editor) RetireTemplateVersion(ctx context.Context, by audit.Actor, name string, n int) (*TemplateVersion, error) {
	var retired *TemplateVersion
	err := d.change(ctx, by, func(tx *Library, ch *audit.Change) error {
		t, err := tx.TemplateByName(ctx, name)
		if err != nil {
			return err
		}
		if n == t.Version {
			return kernel.Invalid("version", "versions.retire_current", "Version", n)
		}
		err = tx.RetireTemplateVersion(ctx, t.ID, n, by.Name, d.now())
		switch {
		case errors.Is(err, kernel.ErrNotFound):
			return kernel.Invalid("version", "versions.unknown", "Version", n, "Latest", t.Version)
		case errors.Is(err, kernel.ErrStateChanged):
			return kernel.Invalid("version", "versions.retired_already", "Version", n)
		case err != nil:
			return err
		}
		if retired, err = tx.TemplateVersionOf(ctx, t.ID, n); err != nil {
			return err
		}
		ch.Audit("template.version_retire", "template", t.Name, audit.Params{"name": t.Name, "version": strconv.Itoa(n)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return retired, nil
}

// RollbackTemplate makes a new version of the template called name equal to its version
// n (content, variables, type, fallback; the names stay), audited as template.rollback.
// rerender renders its waiting messages again from it, as an edit can. kernel.ErrNotFound:
// no such template; an unknown or retired version is a field error on version.
func (d *Editor) RollbackTemplate(ctx context.Context, by audit.Actor, name string, n int, rerender bool) (*Template, error) {
	var saved *Template
	err := d.change(ctx, by, func(tx *Library, ch *audit.Change) error {
		cur, err := tx.TemplateByName(ctx, name)
		if err != nil {
			return err
		}
		v, err := tx.TemplateVersionOf(ctx, cur.ID, n)
		if errors.Is(err, kernel.ErrNotFound) {
			return kernel.Invalid("version", "versions.unknown", "Version", n, "Latest", cur.Version)
		}
		if err != nil {
			return err
		}
		if v.RetiredAt != nil {
			return kernel.Invalid("version", "versions.rollback_retired", "Version", n)
		}
		t := v.Of(cur)
		if err := tx.UpdateTemplate(ctx, name, t); err != nil {
			return err
		}
		if _, err := tx.AddTemplateVersion(ctx, t, by.Name); err != nil {
			return err
		}
		p := TemplateParams(t)
		p["from"] = strconv.Itoa(n)
		ch.Audit("template.rollback", "template", t.Name, p)
		saved = t
		return d.settle(ctx, tx, ch, t, rerender)
	})
	if err != nil {
		return nil, err
	}
	return saved, nil
}
