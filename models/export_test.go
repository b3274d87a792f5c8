package models

import (
	"context"

	"gorm.io/gorm"
)

// QueryOutside runs query, a SELECT of one integer, outside any transaction.
func (s *Store) QueryOutside(ctx context.Context, query string) error {
	var n int
	return s.db.WithContext(ctx).Raw(query).Scan(&n).Error
}

// InTx runs fn inside one transaction; query runs a SELECT of one integer on it.
func (s *Store) InTx(ctx context.Context, fn func(query func(string) error) error) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		return fn(func(q string) error {
			var n int
			return tx.Raw(q).Scan(&n).Error
		})
	})
}
