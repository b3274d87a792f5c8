package models

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"gorm.io/gorm"

	"herald/audit"
	"herald/kernel"
)

// QueryOutside runs query, a SELECT of one integer, outside any transaction.
func (s *Store) QueryOutside(ctx context.Context, query string) error {
	var n int
	return s.k.Writer(ctx).Raw(query).Scan(&n).Error
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

// CreateBothWays writes a batch and an audit entry with GORM's Create (the entry as
// Audit wrote it so: at now when it has no time, cut to its columns), and another batch
// and audit entry as the intake writes them (insertBatches, insertAudit).
func (s *Store) CreateBothWays(ctx context.Context, viaGORM, plain *Batch, gormAudit, plainAudit *audit.Entry) error {
	db := s.k.Writer(ctx)
	if gormAudit.At.IsZero() {
		gormAudit.At = kernel.Now()
	}
	gormAudit.Fit()
	if err := db.Create(viaGORM).Error; err != nil {
		return err
	}
	if err := db.Create(gormAudit).Error; err != nil {
		return err
	}
	if err := insertBatches(kernel.OnTx(db), plain); err != nil {
		return err
	}
	return audit.Insert(kernel.OnTx(db), plainAudit)
}

// CreateBatchesOneTrip writes intakes as one script, with the pool of scripts held to
// one connection; ok is false when the store has no such pool (SQLite).
func (s *Store) CreateBatchesOneTrip(ctx context.Context, items []NewBatch) (ok bool, err error) {
	if s.oneTrip == nil {
		return false, nil
	}
	s.oneTrip.db.SetMaxOpenConns(1)
	return true, s.createBatchesOneTrip(ctx, items)
}

// ErrNotOneTrip is errNotOneTrip.
var ErrNotOneTrip = errNotOneTrip

// WithoutMultiStatements opens the store's pool of scripts again without the
// multi-statement flag, as a proxy that does not pass it on would leave it; false when
// the store has no such pool (SQLite).
func (s *Store) WithoutMultiStatements() (bool, error) {
	if s.oneTrip == nil {
		return false, nil
	}
	cfg := s.oneTrip.cfg.Clone()
	cfg.MultiStatements = false
	p, err := newScriptPool(cfg)
	if err != nil {
		return false, err
	}
	s.oneTrip.db.Close()
	s.oneTrip = p
	return true, nil
}

// ScriptsRefused reports whether the store stopped sending scripts.
func (s *Store) ScriptsRefused() bool { return s.oneTrip != nil && s.oneTrip.refused.Load() }

// FillFields gives every string, integer, boolean and time field of the struct *v a
// value of its own (a pointer to one of those gets a target with such a value), and
// returns the names of the fields it left as they were.
func FillFields(v any) (left []string) {
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		if f.Kind() == reflect.Pointer {
			switch e := f.Type().Elem(); {
			case e.Kind() == reflect.String, e.Kind() == reflect.Int, e.Kind() == reflect.Int64, e.Kind() == reflect.Bool,
				e == reflect.TypeFor[time.Time]():
				f.Set(reflect.New(e))
				f = f.Elem()
			}
		}
		switch {
		case f.Kind() == reflect.String:
			f.SetString(fmt.Sprintf("field %d", i))
		case f.Kind() == reflect.Int, f.Kind() == reflect.Int64:
			f.SetInt(int64(1000 + i))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Type() == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)))
		default:
			left = append(left, rv.Type().Field(i).Name)
		}
	}
	return left
}
