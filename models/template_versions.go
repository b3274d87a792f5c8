package models

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

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
	CreatedAt time.Time
	// RetiredAt is when the version was retired (nil: in use), RetiredBy by whom: a
	// retired version can no longer be pinned by a send or restored by a rollback.
	RetiredAt *time.Time
	RetiredBy string
}

// Of is t with this version's content: what a send pinned to the version renders from.
// The names stay t's, which versions do not keep.
func (v *TemplateVersion) Of(t *Template) *Template {
	out := *t
	out.MsgType, out.Subject, out.Body, out.HTML = v.MsgType, v.Subject, v.Body, v.HTML
	out.Variables, out.Fallback, out.Version = slices.Clone(v.Variables), v.Fallback, v.Number
	return &out
}

// AddTemplateVersion records t's current content as its next version, saved by actor,
// and sets t.Version to its number. The number comes from templates.version raised in
// place: the row lock that UPDATE takes makes concurrent saves of one template wait for
// each other, so each gets its own number (the unique key on template_id, number would
// refuse a second one anyway). Call it in the transaction that saves t.
func (s *Store) AddTemplateVersion(ctx context.Context, t *Template, actor string) (*TemplateVersion, error) {
	db := s.k.Writer(ctx)
	// Raw: the model's Version is read-only, so that a template's own save never writes it.
	res := db.Exec("UPDATE templates SET version = version + 1 WHERE id = ?", t.ID)
	if res.Error != nil {
		return nil, fmt.Errorf("models: count version of template %s: %w", t.Name, res.Error)
	}
	if res.RowsAffected == 0 {
		return nil, fmt.Errorf("models: template %s: %w", t.Name, kernel.ErrNotFound)
	}
	var n int
	if err := db.Model(&Template{}).Where("id = ?", t.ID).Pluck("version", &n).Error; err != nil {
		return nil, fmt.Errorf("models: version of template %s: %w", t.Name, err)
	}
	v := &TemplateVersion{TemplateID: t.ID, Number: n, Actor: actor, MsgType: t.MsgType, Subject: t.Subject, Body: t.Body,
		HTML: t.HTML, Variables: slices.Clone(t.Variables), Fallback: t.Fallback, CreatedAt: kernel.Now()}
	if err := db.Create(v).Error; err != nil {
		return nil, fmt.Errorf("models: save version %d of template %s: %w", n, t.Name, err)
	}
	t.Version = n
	return v, nil
}

// TemplateVersions lists a template's versions, newest first.
func (s *Store) TemplateVersions(ctx context.Context, templateID int64) ([]TemplateVersion, error) {
	var out []TemplateVersion
	if err := s.reader(ctx).Where("template_id = ?", templateID).Order("number DESC").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("models: versions of template %d: %w", templateID, err)
	}
	return out, nil
}

// TemplateVersionOf returns version n of a template; ErrNotFound when it has none.
func (s *Store) TemplateVersionOf(ctx context.Context, templateID int64, n int) (*TemplateVersion, error) {
	var v TemplateVersion
	if err := s.reader(ctx).Where("template_id = ? AND number = ?", templateID, n).First(&v).Error; err != nil {
		return nil, fmt.Errorf("models: version %d of template %d: %w", n, templateID, kernel.NotFound(err))
	}
	return &v, nil
}

// RetireTemplateVersion records version n of a template as retired by by, a
// compare-and-set in the caller's transaction when the store is bound to one:
// ErrStateChanged when it was retired already, ErrNotFound when there is no such
// version.
func (s *Store) RetireTemplateVersion(ctx context.Context, templateID int64, n int, by string, now time.Time) error {
	res := s.k.Writer(ctx).Model(&TemplateVersion{}).Where("template_id = ? AND number = ? AND retired_at IS NULL", templateID, n).
		Updates(map[string]any{"retired_at": now.UTC().Truncate(time.Microsecond), "retired_by": kernel.Truncate(by, 128)})
	if res.Error != nil {
		return fmt.Errorf("models: retire version %d of template %d: %w", n, templateID, res.Error)
	}
	if res.RowsAffected == 1 {
		return nil
	}
	if _, err := s.TemplateVersionOf(ctx, templateID, n); err != nil {
		return err
	}
	return fmt.Errorf("models: retire version %d of template %d: %w", n, templateID, kernel.ErrStateChanged)
}

// WaitingMessage is a message not sent yet whose content a template save may render
// again, with its batch's variables.
type WaitingMessage struct {
	Message
	Variables VarMap
}

// waitingOfTemplate selects the messages of a template's batches that wait and that a
// save may render again: scheduled (pending, due after now) in a batch that needed no
// approval. A batch approved, or awaiting approval, is left out whatever its messages'
// state: what a second person approved (or is asked to approve) is what is sent, so a
// template's later edit never reaches it.
func (s *Store) waitingOfTemplate(ctx context.Context, templateID int64, now time.Time) *gorm.DB {
	return s.reader(ctx).Table("messages").Joins("JOIN batches ON batches.id = messages.batch_id").
		Where("batches.template_id = ? AND batches.approval = '' AND messages.status = ? AND (messages.next_attempt_at IS NULL OR messages.send_at > ?)",
			templateID, StatusPending, now)
}

// CountWaitingOfTemplate counts the scheduled messages of a template's batches that
// needed no approval: those a save asks about.
func (s *Store) CountWaitingOfTemplate(ctx context.Context, templateID int64, now time.Time) (int, error) {
	var n int64
	if err := s.waitingOfTemplate(ctx, templateID, now).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("models: waiting messages of template %d: %w", templateID, err)
	}
	return int(n), nil
}

// WaitingOfTemplate returns the scheduled messages of a template's batches that needed
// no approval (see waitingOfTemplate), with the variables their batches keep, in id
// order.
func (s *Store) WaitingOfTemplate(ctx context.Context, templateID int64, now time.Time) ([]WaitingMessage, error) {
	var out []WaitingMessage
	err := s.waitingOfTemplate(ctx, templateID, now).Select("messages.*, batches.variables AS variables").
		Order("messages.id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: waiting messages of template %d: %w", templateID, err)
	}
	return out, nil
}

// Rerender replaces the content of a message still pending with content rendered from
// version of its template; false when it has moved on meanwhile (compare-and-set on
// its state) and was left as it was.
func (s *Store) Rerender(ctx context.Context, m *Message, version int) (bool, error) {
	res := s.k.Writer(ctx).Model(&Message{}).Where("id = ? AND status = ?", m.ID, StatusPending).Updates(map[string]any{
		"msg_type": m.MsgType, "subject": m.Subject, "content": m.Content, "content_html": m.ContentHTML,
		"template_version": version, "updated_at": kernel.Now()})
	if res.Error != nil {
		return false, fmt.Errorf("models: render message %s again: %w", m.ID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// SetBatchTemplateContent replaces the template content a batch keeps for its fallback
// messages, when it keeps one.
func (s *Store) SetBatchTemplateContent(ctx context.Context, batchID string, c *TemplateContent) error {
	err := s.k.Writer(ctx).Model(&Batch{}).Where("id = ? AND template_content IS NOT NULL", batchID).
		Update("template_content", c).Error
	if err != nil {
		return fmt.Errorf("models: template content of batch %s: %w", batchID, err)
	}
	return nil
}
