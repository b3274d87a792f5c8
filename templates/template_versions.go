package templates

import (
	"context"
	"fmt"
	"slices"
	"time"

	"herald/kernel"
)

// TemplateVersion is one saved state of a template, never changed once written: every
// create, edit and rollback adds the next number. Messages record the number they were
// rendered from (Message.TemplateVersion).
type TemplateVersion struct {
	ID         int64
	TemplateID int64
	Number     int
	// Actor is who saved it, as the audit log names them ("" for the versions made from
	// the templates saved before versions existed).
	Actor     string
	MsgType   string
	Subject   string
	Body      string
	HTML      string `gorm:"column:html"`
	Variables StringList
	Fallback  string
	// ProviderTemplate and ProviderParams are the template's (Template).
	ProviderTemplate string
	ProviderParams   StringList
	CreatedAt        time.Time
	// RetiredAt is when the version was retired (nil: in use), RetiredBy by whom: a
	// retired version can no longer be pinned by a send or restored by a rollback.
	RetiredAt *time.Time
	RetiredBy string
}

// ActorLineFeeds is the actor of the versions migration 00046 made of the templates
// stored with CR line breaks: the same text, with LF only (see CheckTemplate).
const ActorLineFeeds = "line-feeds"

// Of is t with this version's content: what a send pinned to the version renders from.
// The names stay t's, which versions do not keep.
func (v *TemplateVersion) Of(t *Template) *Template {
	out := *t
	out.MsgType, out.Subject, out.Body, out.HTML = v.MsgType, v.Subject, v.Body, v.HTML
	out.Variables, out.Fallback, out.Version = slices.Clone(v.Variables), v.Fallback, v.Number
	out.ProviderTemplate, out.ProviderParams = v.ProviderTemplate, slices.Clone(v.ProviderParams)
	return &out
}

// AddTemplateVersion records t's current content as its next version, saved by actor,
// and sets t.Version to its number. The number comes from templates.version raised in
// place: the row lock that UPDATE takes makes concurrent saves of one template wait for
// each other, so each gets its own number (the unique key on template_id, number would
// refuse a second one anyway). Call it in the transaction that saves t.
func (s *Library) AddTemplateVersion(ctx context.Context, t *Template, actor string) (*TemplateVersion, error) {
	db := s.k.Writer(ctx)
	// Raw: the model's Version is read-only, so that a template's own save never writes it.
	res := db.Exec("UPDATE templates SET version = version + 1 WHERE id = ?", t.ID)
	if res.Error != nil {
		return nil, fmt.Errorf("templates: count version of template %s: %w", t.Name, res.Error)
	}
	if res.RowsAffected == 0 {
		return nil, fmt.Errorf("templates: template %s: %w", t.Name, kernel.ErrNotFound)
	}
	var n int
	if err := db.Model(&Template{}).Where("id = ?", t.ID).Pluck("version", &n).Error; err != nil {
		return nil, fmt.Errorf("templates: version of template %s: %w", t.Name, err)
	}
	v := &TemplateVersion{TemplateID: t.ID, Number: n, Actor: actor, MsgType: t.MsgType, Subject: t.Subject, Body: t.Body,
		HTML: t.HTML, Variables: slices.Clone(t.Variables), Fallback: t.Fallback, CreatedAt: kernel.Now(),
		ProviderTemplate: t.ProviderTemplate, ProviderParams: slices.Clone(t.ProviderParams)}
	if err := db.Create(v).Error; err != nil {
		return nil, fmt.Errorf("templates: save version %d of template %s: %w", n, t.Name, err)
	}
	t.Version = n
	return v, nil
}

// TemplateVersions lists a template's versions, newest first.
func (s *Library) TemplateVersions(ctx context.Context, templateID int64) ([]TemplateVersion, error) {
	var out []TemplateVersion
	if err := s.k.Reader(ctx).Where("template_id = ?", templateID).Order("number DESC").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("templates: versions of template %d: %w", templateID, err)
	}
	return out, nil
}

// TemplateVersionOf returns version n of a template; ErrNotFound when it has none.
func (s *Library) TemplateVersionOf(ctx context.Context, templateID int64, n int) (*TemplateVersion, error) {
	var v TemplateVersion
	if err := s.k.Reader(ctx).Where("template_id = ? AND number = ?", templateID, n).First(&v).Error; err != nil {
		return nil, fmt.Errorf("templates: version %d of template %d: %w", n, templateID, kernel.NotFound(err))
	}
	return &v, nil
}

// RetireTemplateVersion records version n of a template as retired by by, a
// compare-and-set in the caller's transaction when the store is bound to one:
// ErrStateChanged when it was retired already, ErrNotFound when there is no such
// version.
func (s *Library) RetireTemplateVersion(ctx context.Context, templateID int64, n int, by string, now time.Time) error {
	res := s.k.Writer(ctx).Model(&TemplateVersion{}).Where("template_id = ? AND number = ? AND retired_at IS NULL", templateID, n).
		Updates(map[string]any{"retired_at": now.UTC().Truncate(time.Microsecond), "retired_by": kernel.Truncate(by, 128)})
	if res.Error != nil {
		return fmt.Errorf("templates: retire version %d of template %d: %w", n, templateID, res.Error)
	}
	if res.RowsAffected == 1 {
		return nil
	}
	if _, err := s.TemplateVersionOf(ctx, templateID, n); err != nil {
		return err
	}
	return fmt.Errorf("templates: retire version %d of template %d: %w", n, templateID, kernel.ErrStateChanged)
}
