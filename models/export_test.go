package models

import (
	"context"
	"time"

	"gorm.io/gorm"
)

// QueryOutside runs query, a SELECT of one integer, outside any transaction.
func (s *Store) QueryOutside(ctx context.Context, query string) error {
	var n int
	return s.db.WithContext(ctx).Raw(query).Scan(&n).Error
}

// RawInTx runs fn inside one transaction; query runs a SELECT of one integer on it.
func (s *Store) RawInTx(ctx context.Context, fn func(query func(string) error) error) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		return fn(func(q string) error {
			var n int
			return tx.Raw(q).Scan(&n).Error
		})
	})
}

// BeginGuess counts a password guess at a time as a sign-in does, without checking any
// password; wrong says whether the guess is then kept as a wrong one or given back.
func (s *Store) BeginGuess(ctx context.Context, username, ip string, at time.Time, wrong bool) error {
	g, err := s.beginGuess(ctx, username, ip, at)
	if err != nil {
		return err
	}
	s.endGuess(ctx, g, !wrong)
	return nil
}

// UseRecipientClock sets the clock of the store's cache of recipients.
func (s *Store) UseRecipientClock(now func() time.Time) {
	s.people.mu.Lock()
	s.people.now = now
	s.people.mu.Unlock()
}
