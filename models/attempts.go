package models

import (
	"context"
	"fmt"
	"time"

	"herald/kernel"

	"gorm.io/gorm"
)

// Attempt is one provider call for a message.
type Attempt struct {
	ID           int64
	MessageID    string
	N            int
	StartedAt    time.Time
	DurationMs   int
	Outcome      string
	ErrorClass   string
	ProviderCode string
	Error        string
}

// insertAttempts writes attempt rows with kernel.InsertRows. Every delivered message writes
// one: GORM's Create reflects over each field of each row and reads every new id back,
// which none of its callers need.
func insertAttempts(tx *gorm.DB, attempts []Attempt) error {
	return kernel.InsertRows(kernel.OnTx(tx), "attempts", "message_id, n, started_at, duration_ms, outcome, error_class, provider_code, error", len(attempts),
		func(i int, args []any) []any {
			a := &attempts[i]
			return append(args, a.MessageID, a.N, a.StartedAt, a.DurationMs, a.Outcome, a.ErrorClass, a.ProviderCode, a.Error)
		})
}

// AttemptsOf lists a message's attempts in order.
func (s *Store) AttemptsOf(ctx context.Context, messageID string) ([]Attempt, error) {
	var out []Attempt
	if err := s.reader(ctx).Where("message_id = ?", messageID).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("models: attempts of %s: %w", messageID, err)
	}
	return out, nil
}
