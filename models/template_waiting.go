package models

import (
	"context"
	"fmt"
	"herald/kernel"
	"time"

	"gorm.io/gorm"
)

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
func (s *Intake) waitingOfTemplate(ctx context.Context, templateID int64, now time.Time) *gorm.DB {
	return s.k.Reader(ctx).Table("messages").Joins("JOIN batches ON batches.id = messages.batch_id").
		Where("batches.template_id = ? AND batches.approval = '' AND messages.status = ? AND (messages.next_attempt_at IS NULL OR messages.send_at > ?)",
			templateID, StatusPending, now)
}

// CountWaitingOfTemplate counts the scheduled messages of a template's batches that
// needed no approval: those a save asks about.
func (s *Intake) CountWaitingOfTemplate(ctx context.Context, templateID int64, now time.Time) (int, error) {
	var n int64
	if err := s.waitingOfTemplate(ctx, templateID, now).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("models: waiting messages of template %d: %w", templateID, err)
	}
	return int(n), nil
}

// WaitingOfTemplate returns the scheduled messages of a template's batches that needed
// no approval (see waitingOfTemplate), with the variables their batches keep, in id
// order.
func (s *Intake) WaitingOfTemplate(ctx context.Context, templateID int64, now time.Time) ([]WaitingMessage, error) {
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
func (s *Intake) Rerender(ctx context.Context, m *Message, version int) (bool, error) {
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
func (s *Intake) SetBatchTemplateContent(ctx context.Context, batchID string, c *TemplateContent) error {
	err := s.k.Writer(ctx).Model(&Batch{}).Where("id = ? AND template_content IS NOT NULL", batchID).
		Update("template_content", c).Error
	if err != nil {
		return fmt.Errorf("models: template content of batch %s: %w", batchID, err)
	}
	return nil
}
