package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"herald/kernel"
)

// Idempotency record states.
const (
	IdemInFlight = "in_flight"
	IdemDone     = "done"
)

// IdempotencyTTL is how long an idempotency key is remembered.
const IdempotencyTTL = 24 * time.Hour

// IdempotencyKey remembers one API request by its key so a retry of it replays the
// first answer instead of sending twice.
type IdempotencyKey struct {
	ID          int64
	APIKeyID    int64 `gorm:"column:api_key_id"`
	IdemKey     string
	RequestHash string
	State       string
	StatusCode  int
	Response    *string
	BatchID     *string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// ErrIdempotencyMismatch means the key was used before with a different request body.
var ErrIdempotencyMismatch = kernel.Declare(kernel.DomainError{Kind: kernel.KindInvalid, Code: "idempotency_mismatch", Key: "api.idempotency_mismatch",
	Field: "idempotency_key", Text: "idempotency key reused with a different request"})

// ErrIdempotencyInFlight means the first request with this key is still being processed.
var ErrIdempotencyInFlight = kernel.Declare(kernel.DomainError{Kind: kernel.KindConflict, Code: "idempotency_in_flight", Key: "api.idempotency_in_flight",
	Field: "idempotency_key", Text: "a request with this idempotency key is in flight"})

// BeginIdempotent claims a key for a request. It returns nil, nil when the caller should
// process the request (and then call CompleteIdempotent or AbortIdempotent); the earlier
// record when the request was already answered (replay it); ErrIdempotencyMismatch or
// ErrIdempotencyInFlight otherwise. An expired record is replaced.
func (s *Intake) BeginIdempotent(ctx context.Context, apiKeyID int64, key, requestHash string) (*IdempotencyKey, error) {
	now := kernel.Now()
	rec := &IdempotencyKey{APIKeyID: apiKeyID, IdemKey: key, RequestHash: requestHash, State: IdemInFlight,
		CreatedAt: now, ExpiresAt: now.Add(IdempotencyTTL)}
	for range 2 {
		err := s.k.Writer(ctx).Create(rec).Error
		if err == nil {
			return nil, nil
		}
		if !kernel.IsDuplicate(err) {
			return nil, fmt.Errorf("models: begin idempotent request: %w", err)
		}
		var prev IdempotencyKey
		err = s.k.Reader(ctx).Where("api_key_id = ? AND idem_key = ?", apiKeyID, key).First(&prev).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			continue // aborted meanwhile; try again
		}
		if err != nil {
			return nil, fmt.Errorf("models: read idempotency key: %w", err)
		}
		// An in-flight record this old belongs to a process that died before committing
		// (the batch and the completion commit together), so nothing was sent: take over.
		if prev.ExpiresAt.Before(now) || (prev.State == IdemInFlight && prev.CreatedAt.Before(now.Add(-idemAbandonAfter))) {
			s.k.Writer(ctx).Where("id = ? AND state = ? AND created_at = ?", prev.ID, prev.State, prev.CreatedAt).Delete(&IdempotencyKey{})
			rec.ID = 0
			continue
		}
		switch {
		case prev.State == IdemInFlight:
			return nil, ErrIdempotencyInFlight
		case prev.RequestHash != requestHash:
			return nil, ErrIdempotencyMismatch
		}
		return &prev, nil
	}
	return nil, ErrIdempotencyInFlight
}

// idemAbandonAfter is how long an in-flight record may stay before another request with
// the same key takes it over. Intake of 10,000 recipients takes well under this.
const idemAbandonAfter = 2 * time.Minute

// IdemCompletion is the answer to store with a batch, in the batch's transaction.
type IdemCompletion struct {
	APIKeyID   int64
	Key        string
	StatusCode int
	Response   string
}

// completeIdempotent stores the answer to replay, in the caller's transaction.
func completeIdempotent(tx *gorm.DB, c *IdemCompletion, batchID string) error {
	res := tx.Model(&IdempotencyKey{}).
		Where("api_key_id = ? AND idem_key = ? AND state = ?", c.APIKeyID, c.Key, IdemInFlight).
		Updates(map[string]any{"state": IdemDone, "status_code": c.StatusCode, "response": c.Response, "batch_id": batchID})
	if res.Error != nil {
		return fmt.Errorf("models: complete idempotent request: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("models: complete idempotent request: %w", kernel.ErrStateChanged)
	}
	return nil
}

// AbortIdempotent forgets a key whose request was rejected, so it can be used again.
func (s *Intake) AbortIdempotent(ctx context.Context, apiKeyID int64, key string) error {
	err := s.k.Writer(ctx).Where("api_key_id = ? AND idem_key = ? AND state = ?", apiKeyID, key, IdemInFlight).
		Delete(&IdempotencyKey{}).Error
	if err != nil {
		return fmt.Errorf("models: abort idempotent request: %w", err)
	}
	return nil
}

// DeleteExpiredIdempotencyKeys removes records past their time.
func (s *Intake) DeleteExpiredIdempotencyKeys(ctx context.Context) (int64, error) {
	res := s.k.Writer(ctx).Where("expires_at < ?", kernel.Now()).Delete(&IdempotencyKey{})
	return res.RowsAffected, res.Error
}
