package models

import (
	"context"
	"fmt"
	"strings"
	"time"

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

// insertAttempts writes attempt rows with one multi-row INSERT per insertChunk of them.
// Every delivered message writes one, so it is plain SQL: GORM's Create reflects over
// each field of each row and reads every new id back, which none of its callers need.
func insertAttempts(tx *gorm.DB, attempts []Attempt) error {
	const row = "(?, ?, ?, ?, ?, ?, ?, ?)"
	for len(attempts) > 0 {
		chunk := attempts[:min(len(attempts), insertChunk)]
		attempts = attempts[len(chunk):]
		var stmt strings.Builder
		stmt.WriteString("INSERT INTO attempts (message_id, n, started_at, duration_ms, outcome, error_class, provider_code, error) VALUES ")
		args := make([]any, 0, 8*len(chunk))
		for i, a := range chunk {
			if i > 0 {
				stmt.WriteString(", ")
			}
			stmt.WriteString(row)
			args = append(args, a.MessageID, a.N, a.StartedAt, a.DurationMs, a.Outcome, a.ErrorClass, a.ProviderCode, a.Error)
		}
		if err := tx.Exec(stmt.String(), args...).Error; err != nil {
			return err
		}
	}
	return nil
}

// AttemptsOf lists a message's attempts in order.
func (s *Store) AttemptsOf(ctx context.Context, messageID string) ([]Attempt, error) {
	var out []Attempt
	if err := s.reader(ctx).Where("message_id = ?", messageID).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("models: attempts of %s: %w", messageID, err)
	}
	return out, nil
}
