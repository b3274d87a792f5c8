package models

import (
	"context"
	"fmt"
	"time"
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

// AttemptsOf lists a message's attempts in order.
func (s *Store) AttemptsOf(ctx context.Context, messageID string) ([]Attempt, error) {
	var out []Attempt
	if err := s.reader(ctx).Where("message_id = ?", messageID).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("models: attempts of %s: %w", messageID, err)
	}
	return out, nil
}
