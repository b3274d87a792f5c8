package recall

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"

	"herald/audit"
	"herald/delivery"
	"herald/kernel"
	"herald/models"
)

// RecallMessage moves a sent message to recalled, recording when and by whom, and
// writes its message.recalled event when a callback key hears of it, in one transaction
// (the caller's, when the store is bound to one). ErrStateChanged means it was no
// longer sent (recalled already, by someone else meanwhile). A recalled message was
// final already when it was sent, so its batch's count of open messages stays.
func (s *Requests) RecallMessage(ctx context.Context, m *models.Message, by string, now time.Time) error {
	now = now.UTC().Truncate(time.Microsecond)
	return s.k.Tx(ctx, func(tx *gorm.DB) error {
		res := tx.Model(&models.Message{}).Where("id = ? AND status IN ?", m.ID, delivery.Recallable).
			Updates(map[string]any{"status": models.StatusRecalled, "recalled_at": now, "recalled_by": kernel.Truncate(by, 128), "updated_at": now})
		if err := models.CASResult(res, "recall", m.ID); err != nil {
			return err
		}
		if m.CallbackKeyID == nil {
			return nil
		}
		id := m.ID
		ev := models.NewEvent(*m.CallbackKeyID, models.EventMessageRecalled, &id, m.BatchID, string(models.StatusRecalled), "", now)
		if err := tx.Create(&ev).Error; err != nil {
			return fmt.Errorf("recall: record recall of message %s: %w", m.ID, err)
		}
		return nil
	})
}

// RecallTargets returns the messages of a batch a recall would touch, in id order: sent
// ones (to recall) and those not sent yet (to cancel).
func (s *Requests) RecallTargets(ctx context.Context, batchID string) ([]models.Message, error) {
	return s.BatchMessagesIn(ctx, batchID, append(append([]models.Status{}, delivery.Recallable...), delivery.Cancellable...))
}

// BatchMessagesIn returns the messages of a batch in one of the states, in id order:
// what a batch recall or cancel acts on.
func (s *Requests) BatchMessagesIn(ctx context.Context, batchID string, states []models.Status) ([]models.Message, error) {
	var out []models.Message
	err := s.k.Reader(ctx).Where("batch_id = ? AND status IN ?", batchID, states).Order("id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("recall: messages of batch %s in %v: %w", batchID, states, err)
	}
	return out, nil
}

// SentInCall returns the sent messages of a batch that one platform call carried, as
// the receipt it returned names it (a DingTalk task id), in id order.
func (s *Requests) SentInCall(ctx context.Context, batchID string, accountID int64, providerID string) ([]models.Message, error) {
	var out []models.Message
	err := s.k.Reader(ctx).Where("batch_id = ? AND account_id = ? AND provider_message_id = ? AND status = ?",
		batchID, accountID, providerID, models.StatusSent).Order("id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("recall: messages of call %s in batch %s: %w", providerID, batchID, err)
	}
	return out, nil
}

// Recall request states (RecallRequest.Status). A request awaiting approval past its
// ExpiresAt is expired: it reads so at once (Lapsed), and is recorded so by the
// sweeper, or by whoever acts on it first (ExpireRecallRequests).
const (
	RecallAwaiting = models.ApprovalAwaiting
	RecallApproved = models.ApprovalApproved
	RecallRejected = models.ApprovalRejected
)

// RecallCounts is what a batch recall did, by outcome.
type RecallCounts struct {
	Recalled           int `json:"recalled"`
	Cancelled          int `json:"cancelled"`
	RecallUnsupported  int `json:"recall_unsupported"`
	RecallWindowPassed int `json:"recall_window_passed"`
	Failed             int `json:"failed"`
}

// Add counts one message's outcome, named as the API names it (the field's JSON name).
func (c *RecallCounts) Add(outcome string) {
	switch outcome {
	case "recalled":
		c.Recalled++
	case "cancelled":
		c.Cancelled++
	case "recall_unsupported":
		c.RecallUnsupported++
	case "recall_window_passed":
		c.RecallWindowPassed++
	default:
		c.Failed++
	}
}

// Value implements driver.Valuer.
func (c RecallCounts) Value() (driver.Value, error) {
	b, err := json.Marshal(c)
	return string(b), err
}

// Scan implements sql.Scanner.
func (c *RecallCounts) Scan(src any) error { return kernel.ScanJSON(src, c) }

// RecallRequest is a batch recall for more people than the approval threshold, waiting
// for another person's decision (or decided).
type RecallRequest struct {
	ID      int64
	BatchID string
	// RequestedBy is the actor who asked (a username or apikey:<name>); Requester is the
	// person behind it, who may not approve their own request.
	RequestedBy  string
	Requester    string
	APIKeyID     *int64 `gorm:"column:api_key_id"`
	People       int
	Status       string
	DecidedBy    string
	DecidedAt    *time.Time
	DecisionNote string
	// Result is what the recall did once approved.
	Result *RecallCounts
	// ExpiresAt is when the request lapses undecided: when the earliest of the batch's
	// sent messages passes its platform's recall window (nil for a request recorded
	// before requests expired).
	ExpiresAt *time.Time
	CreatedAt time.Time
}

// Lapsed reports whether the request still awaits a decision although its time ran
// out at now: it is expired, whether or not that was recorded yet.
func (r *RecallRequest) Lapsed(now time.Time) bool {
	return r.Status == RecallAwaiting && r.ExpiresAt != nil && !now.Before(*r.ExpiresAt)
}

// AskedBy reports whether the request is the doing of the actor named name, of person
// (the console user behind it, "" for none) or of the API key apiKeyID (0 for none):
// the one who may not decide on it.
func (r *RecallRequest) AskedBy(name, person string, apiKeyID int64) bool {
	return name == r.RequestedBy || (person != "" && person == r.Requester) ||
		(apiKeyID != 0 && r.APIKeyID != nil && *r.APIKeyID == apiKeyID)
}

// State is the request's status as of now: expired once it lapsed.
func (r *RecallRequest) State(now time.Time) string {
	if r.Lapsed(now) {
		return models.RecallExpired
	}
	return r.Status
}

// CreateRecallRequest records a recall request awaiting approval, in the caller's
// transaction when the store is bound to one.
func (s *Requests) CreateRecallRequest(ctx context.Context, r *RecallRequest) error {
	r.Status, r.CreatedAt = RecallAwaiting, kernel.Now()
	if r.ExpiresAt != nil {
		at := r.ExpiresAt.UTC().Truncate(time.Microsecond)
		r.ExpiresAt = &at
	}
	r.RequestedBy, r.Requester = kernel.Truncate(r.RequestedBy, 128), kernel.Truncate(r.Requester, 64)
	if err := s.k.Writer(ctx).Create(r).Error; err != nil {
		return fmt.Errorf("recall: record recall request of batch %s: %w", r.BatchID, err)
	}
	return nil
}

// LatestRecallRequest returns a batch's latest recall request, or nil when it has none.
func (s *Requests) LatestRecallRequest(ctx context.Context, batchID string) (*RecallRequest, error) {
	var list []RecallRequest
	if err := s.k.Reader(ctx).Where("batch_id = ?", batchID).Order("id DESC").Limit(1).Find(&list).Error; err != nil {
		return nil, fmt.Errorf("recall: recall request of batch %s: %w", batchID, err)
	}
	if len(list) == 0 {
		return nil, nil
	}
	return &list[0], nil
}

// RecallRequestsAwaiting returns the recall requests waiting for a decision at now,
// oldest first, at most limit of them: those past their expiry are left out.
func (s *Requests) RecallRequestsAwaiting(ctx context.Context, now time.Time, limit int) ([]RecallRequest, error) {
	var out []RecallRequest
	if err := s.k.Reader(ctx).Where("status = ? AND (expires_at IS NULL OR expires_at > ?)", RecallAwaiting, now.UTC()).
		Order("created_at, id").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("recall: recall requests awaiting approval: %w", err)
	}
	return out, nil
}

// DecideRecallRequest moves a recall request from awaiting approval to the decision (a
// compare-and-set: ErrStateChanged when it was decided already or has expired by now),
// in the caller's transaction when the store is bound to one.
func (s *Requests) DecideRecallRequest(ctx context.Context, id int64, decision, by, note string, now time.Time) error {
	res := s.k.Writer(ctx).Model(&RecallRequest{}).
		Where("id = ? AND status IN ? AND (expires_at IS NULL OR expires_at > ?)", id, models.ApprovalDecidable, now.UTC()).
		Updates(map[string]any{"status": decision, "decided_by": kernel.Truncate(by, 128), "decided_at": now.UTC(), "decision_note": kernel.Truncate(note, 255)})
	if res.Error != nil {
		return fmt.Errorf("recall: decide recall request %d: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("recall: decide recall request %d: %w", id, kernel.ErrStateChanged)
	}
	return nil
}

// ExpireRecallRequests records every recall request awaiting approval whose expiry
// passed by now as expired, each with its audit entry (Herald's own doing), and
// returns them. A request decided meanwhile is left alone.
func (s *Requests) ExpireRecallRequests(ctx context.Context, now time.Time) ([]RecallRequest, error) {
	var lapsed []RecallRequest
	err := s.k.Reader(ctx).Where("status IN ? AND expires_at IS NOT NULL AND expires_at <= ?", models.ApprovalExpirable, now.UTC()).
		Order("expires_at, id").Limit(100).Find(&lapsed).Error
	if err != nil {
		return nil, fmt.Errorf("recall: lapsed recall requests: %w", err)
	}
	var expired []RecallRequest
	for _, r := range lapsed {
		entry := audit.Entry{Actor: "herald", ActorType: "system", Action: "batch.recall_expire", TargetType: "batch", TargetID: r.BatchID}.
			WithParams(audit.Params{"people": strconv.Itoa(r.People), "requested_by": r.RequestedBy})
		err := s.k.InTx(ctx, func(tx *kernel.DB) error {
			res := tx.Writer(ctx).Model(&RecallRequest{}).Where("id = ? AND status IN ?", r.ID, models.ApprovalExpirable).
				Updates(map[string]any{"status": models.RecallExpired, "decided_at": now.UTC()})
			if res.Error != nil {
				return fmt.Errorf("recall: expire recall request %d: %w", r.ID, res.Error)
			}
			if res.RowsAffected == 0 {
				return kernel.ErrStateChanged
			}
			return audit.NewLog(tx).Write(ctx, entry)
		})
		if errors.Is(err, kernel.ErrStateChanged) {
			continue // decided meanwhile
		}
		if err != nil {
			return expired, err
		}
		expired = append(expired, r)
	}
	return expired, nil
}

// RecordRecallResult keeps what an approved recall request did.
func (s *Requests) RecordRecallResult(ctx context.Context, id int64, c RecallCounts) error {
	if err := s.k.Writer(ctx).Model(&RecallRequest{}).Where("id = ?", id).Update("result", c).Error; err != nil {
		return fmt.Errorf("recall: record result of recall request %d: %w", id, err)
	}
	return nil
}
