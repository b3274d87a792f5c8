package models

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"herald/kernel"
	"herald/migrations"
)

// MessageStat is one minute of one account's message counts (UTC minutes). Processes
// add to it in batches; the dashboard reads it instead of counting messages.
type MessageStat struct {
	Minute    time.Time `gorm:"primaryKey"`
	AccountID int64     `gorm:"primaryKey"`
	Created   int
	Sent      int
	Failed    int
	Stopped   int
	Cancelled int
}

// statKey identifies a row of message_stats.
type statKey struct {
	minute    time.Time
	accountID int64
}

// Stats aggregates counts in memory and writes them to message_stats once a second, so
// the hot path pays a map update, not a database write, per message. A crash loses at
// most a second of dashboard counts; the messages table is unaffected.
type Stats struct {
	store *Store
	mu    sync.Mutex
	delta map[statKey]*MessageStat
}

// NewStats returns an aggregator writing to the store.
func (s *Store) NewStats() *Stats { return &Stats{store: s, delta: map[statKey]*MessageStat{}} }

// Count adds n to one counter ("created", "sent", "failed", "stopped" or "cancelled")
// of an account for the current minute.
func (st *Stats) Count(accountID int64, counter string, n int) {
	st.CountAt(accountID, counter, kernel.Now(), n)
}

// Unstop takes re-sent messages back out of the stopped counts of the minutes they
// stopped in (their last update), so that the dashboard's stopped today counts what is
// still stopped, not what stopped and was sent again since.
func (st *Stats) Unstop(msgs []Message) {
	for _, m := range msgs {
		st.CountAt(m.AccountID, "stopped", m.UpdatedAt, -1)
	}
}

// CountAt is Count for the minute of at.
func (st *Stats) CountAt(accountID int64, counter string, at time.Time, n int) {
	if st == nil || n == 0 {
		return
	}
	k := statKey{minute: at.UTC().Truncate(time.Minute), accountID: accountID}
	st.mu.Lock()
	defer st.mu.Unlock()
	d := st.delta[k]
	if d == nil {
		d = &MessageStat{Minute: k.minute, AccountID: accountID}
		st.delta[k] = d
	}
	switch counter {
	case "created":
		d.Created += n
	case "sent":
		d.Sent += n
	case "failed":
		d.Failed += n
	case "stopped":
		d.Stopped += n
	case "cancelled":
		d.Cancelled += n
	}
}

// Flush writes the counts gathered since the last flush.
func (st *Stats) Flush(ctx context.Context) error {
	st.mu.Lock()
	rows := make([]MessageStat, 0, len(st.delta))
	for _, d := range st.delta {
		rows = append(rows, *d)
	}
	st.delta = map[statKey]*MessageStat{}
	st.mu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	// A fixed order keeps concurrent flushes from deadlocking on the same rows.
	sort.Slice(rows, func(i, j int) bool {
		if !rows[i].Minute.Equal(rows[j].Minute) {
			return rows[i].Minute.Before(rows[j].Minute)
		}
		return rows[i].AccountID < rows[j].AccountID
	})
	return st.store.addStats(ctx, rows)
}

// Run flushes every interval until ctx ends, then once more. A failed flush loses its
// counts (the dashboard is off by them; the messages table is unaffected) and is logged.
func (st *Stats) Run(ctx context.Context, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := st.Flush(fctx); err != nil {
				log.Warn("flush message stats", "error", err)
			}
			cancel()
			return
		case <-t.C:
			if err := st.Flush(ctx); err != nil && ctx.Err() == nil {
				log.Warn("flush message stats", "error", err)
			}
		}
	}
}

func (s *Store) addStats(ctx context.Context, rows []MessageStat) error {
	var b strings.Builder
	args := make([]any, 0, len(rows)*7)
	b.WriteString("INSERT INTO message_stats (minute, account_id, created, sent, failed, stopped, cancelled) VALUES ")
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?)")
		args = append(args, r.Minute, r.AccountID, r.Created, r.Sent, r.Failed, r.Stopped, r.Cancelled)
	}
	cols := []string{"created", "sent", "failed", "stopped", "cancelled"}
	if s.k.Dialect() == migrations.MySQL {
		b.WriteString(" ON DUPLICATE KEY UPDATE ")
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s = %s + VALUES(%s)", c, c, c)
		}
	} else {
		b.WriteString(" ON CONFLICT (minute, account_id) DO UPDATE SET ")
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s = %s + excluded.%s", c, c, c)
		}
	}
	if err := s.k.Writer(ctx).Exec(b.String(), args...).Error; err != nil {
		return fmt.Errorf("models: add message stats: %w", err)
	}
	return nil
}

// StatsSince sums message_stats per minute (all accounts) from a time on.
func (s *Store) StatsSince(ctx context.Context, since time.Time) ([]MessageStat, error) {
	var out []MessageStat
	err := s.reader(ctx).Model(&MessageStat{}).
		Select("minute, SUM(created) AS created, SUM(sent) AS sent, SUM(failed) AS failed, SUM(stopped) AS stopped, SUM(cancelled) AS cancelled").
		Where("minute >= ?", since.UTC()).Group("minute").Order("minute").Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: message stats: %w", err)
	}
	return out, nil
}

// CountSending counts messages being delivered right now.
func (s *Store) CountSending(ctx context.Context) (int64, error) {
	var n int64
	err := s.reader(ctx).Model(&Message{}).Where("status = ?", StatusSending).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("models: count sending: %w", err)
	}
	return n, nil
}

// RecentFailure is a failed attempt for the dashboard.
type RecentFailure struct {
	MessageID    string
	StartedAt    time.Time
	ErrorClass   string
	ProviderCode string
	Error        string
}

// RecentFailures lists the latest failed attempts.
func (s *Store) RecentFailures(ctx context.Context, limit int) ([]RecentFailure, error) {
	var out []RecentFailure
	err := s.reader(ctx).Model(&Attempt{}).
		Select("message_id, started_at, error_class, provider_code, error").
		Where("outcome = ?", "failed").Order("id DESC").Limit(limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("models: recent failures: %w", err)
	}
	return out, nil
}
