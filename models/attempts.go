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

// insertAttempts writes attempt rows with insertRows. Every delivered message writes
// one: GORM's Create reflects over each field of each row and reads every new id back,
// which none of its callers need.
func insertAttempts(tx *gorm.DB, attempts []Attempt) error {
	return insertRows(onTx(tx), "attempts", "message_id, n, started_at, duration_ms, outcome, error_class, provider_code, error", len(attempts),
		func(i int, args []any) []any {
			a := &attempts[i]
			return append(args, a.MessageID, a.N, a.StartedAt, a.DurationMs, a.Outcome, a.ErrorClass, a.ProviderCode, a.Error)
		})
}

// rowWriter runs the INSERT statements that write new rows: on a transaction, each at
// once (onTx); in a script, gathered for one call to the database (one_trip.go).
type rowWriter interface {
	insert(stmt string, args []any) error
}

// txWriter runs each INSERT at once on a transaction. The statement goes straight to
// the transaction's connection: GORM's Exec would walk it and every one of its values
// again, which for a large intake allocated more than GORM's own Create.
type txWriter struct{ tx *gorm.DB }

// onTx is the rowWriter of a transaction (or of a database handle, outside one).
func onTx(tx *gorm.DB) rowWriter { return txWriter{tx} }

func (w txWriter) insert(stmt string, args []any) error {
	_, err := w.tx.Statement.ConnPool.ExecContext(w.tx.Statement.Context, stmt, args...)
	return err
}

// insertRows writes n rows into table with one multi-row INSERT per insertChunk of them;
// values appends row i's values, in the order of columns, to args.
func insertRows(w rowWriter, table, columns string, n int, values func(i int, args []any) []any) error {
	width := strings.Count(columns, ",") + 1
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	for start := 0; start < n; start += insertChunk {
		end := min(start+insertChunk, n)
		var stmt strings.Builder
		stmt.Grow(len(table) + len(columns) + 32 + (end-start)*(len(row)+2))
		stmt.WriteString("INSERT INTO " + table + " (" + columns + ") VALUES ")
		args := make([]any, 0, (end-start)*width)
		for i := start; i < end; i++ {
			if i > start {
				stmt.WriteString(", ")
			}
			stmt.WriteString(row)
			args = values(i, args)
		}
		if err := w.insert(stmt.String(), args); err != nil {
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
