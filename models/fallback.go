package models

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"herald/kernel"
)

// VarMap is a map of strings stored as a JSON object in one nullable column.
type VarMap map[string]string

// Value implements driver.Valuer.
func (m VarMap) Value() (driver.Value, error) {
	if m == nil {
		return nil, nil
	}
	b, err := json.Marshal(map[string]string(m))
	return string(b), err
}

// GormDataType tells GORM the column's type.
func (VarMap) GormDataType() string { return "text" }

// Scan implements sql.Scanner.
func (m *VarMap) Scan(src any) error {
	if src == nil {
		*m = nil
		return nil
	}
	return kernel.ScanJSON(src, m)
}

// ErrorNoAddress is the error class of a message created stopped because its recipient
// has no address on its platform: it is there to fall back from.
const ErrorNoAddress = "no_address"

// DueFallbacks returns stopped messages whose next message in their chain is not made
// yet, oldest first, leaving out batches that wait for approval.
func (s *Intake) DueFallbacks(ctx context.Context, limit int) ([]Message, error) {
	var out []Message
	err := s.k.Writer(ctx).Where("fallback_due = ? AND batch_id NOT IN (SELECT id FROM batches WHERE approval = ?)", true, ApprovalAwaiting).
		Order("id").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: due fallbacks: %w", err)
	}
	return out, nil
}

// LinkFallback writes next, the message prev falls back to, and links the two, in one
// transaction; the compare-and-set on prev's fallback_due makes sure a chain moves on
// once. ErrStateChanged: another process made prev's next message. Two processes moving
// one chain at once can deadlock on its rows: the victim runs again and then finds the
// chain moved.
func (s *Intake) LinkFallback(ctx context.Context, prev, next *Message) error {
	return s.k.TxRetry(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&Message{}).Where("id = ? AND fallback_due = ?", prev.ID, true).
			Updates(map[string]any{"fallback_due": false, "fallback_next": next.ID})
		if err := CASResult(res, "fall back from", prev.ID); err != nil {
			return err
		}
		next.FallbackOf = &prev.ID
		if err := insertMessage(tx, next); err != nil {
			return fmt.Errorf("models: create fallback of %s: %w", prev.ID, err)
		}
		return nil
	})
}

// EndFallback records that prev's chain ends with prev: no platform left has an
// address for the person or an account to send with. A callback key's batch may then
// be complete.
func (s *Intake) EndFallback(ctx context.Context, prev *Message) error {
	return s.k.TxRetry(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&Message{}).Where("id = ? AND fallback_due = ?", prev.ID, true).Update("fallback_due", false)
		if err := CASResult(res, "end the chain of", prev.ID); err != nil {
			return err
		}
		return recordChainsEnded(tx, []Message{*prev}, kernel.Now())
	})
}

// recordChainsEnded writes what the end of these stopped messages' chains means to their
// callback keys: no event of its own (each stop was reported already), but their batch
// may now be complete.
func recordChainsEnded(tx *gorm.DB, ended []Message, now time.Time) error {
	var finals []finalMessage
	for _, m := range ended {
		if m.CallbackKeyID != nil {
			finals = append(finals, finalMessage{id: m.ID, batchID: m.BatchID, keyID: *m.CallbackKeyID, status: StatusStopped, silent: true})
		}
	}
	return recordFinal(tx, finals, now)
}

// endChains ends the due chains of a rejected batch (its people without an address on
// the first platform): nothing of a rejected batch is sent.
func endChains(tx *gorm.DB, batchID string, now time.Time) error {
	var due []Message
	if err := tx.Select("id, batch_id, callback_key_id").Where("batch_id = ? AND fallback_due = ?", batchID, true).Find(&due).Error; err != nil {
		return fmt.Errorf("models: chains of batch %s: %w", batchID, err)
	}
	if len(due) == 0 {
		return nil
	}
	if err := tx.Model(&Message{}).Where("batch_id = ? AND fallback_due = ?", batchID, true).Update("fallback_due", false).Error; err != nil {
		return fmt.Errorf("models: end chains of batch %s: %w", batchID, err)
	}
	return recordChainsEnded(tx, due, now)
}
