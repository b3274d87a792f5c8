// Package migrations holds Herald's versioned SQL schema, one folder per dialect, and
// applies it with goose. The two folders must describe the same tables and columns; a
// test in models checks that against the GORM models.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
)

//go:embed mysql/*.sql sqlite/*.sql
var files embed.FS

// Dialect names a supported database.
type Dialect string

// The supported dialects, named as the migration folders are.
const (
	MySQL  Dialect = "mysql"
	SQLite Dialect = "sqlite"
)

// FS returns the migration files of one dialect.
func FS(d Dialect) (fs.FS, error) { return fs.Sub(files, string(d)) }

func provider(db *sql.DB, d Dialect) (*goose.Provider, error) {
	fsys, err := FS(d)
	if err != nil {
		return nil, err
	}
	gd := goose.DialectMySQL
	if d == SQLite {
		gd = goose.DialectSQLite3
	}
	p, err := goose.NewProvider(gd, db, fsys)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}

// Up applies every pending migration and reports how many it applied and the version the
// database was at before (0 for a new database).
func Up(ctx context.Context, db *sql.DB, d Dialect) (applied int, before int64, err error) {
	p, err := provider(db, d)
	if err != nil {
		return 0, 0, err
	}
	before, err = p.GetDBVersion(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("migrations: read version: %w", err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return 0, before, fmt.Errorf("migrations: up: %w", err)
	}
	return len(res), before, nil
}

// Status is one migration and whether it is applied.
type Status struct {
	Version   int64
	Source    string
	Applied   bool
	AppliedAt string
}

// List reports every known migration and its state.
func List(ctx context.Context, db *sql.DB, d Dialect) ([]Status, error) {
	p, err := provider(db, d)
	if err != nil {
		return nil, err
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: status: %w", err)
	}
	out := make([]Status, 0, len(st))
	for _, s := range st {
		row := Status{Version: s.Source.Version, Source: s.Source.Path, Applied: s.State == goose.StateApplied}
		if row.Applied {
			row.AppliedAt = s.AppliedAt.UTC().Format("2006-01-02 15:04:05 UTC")
		}
		out = append(out, row)
	}
	return out, nil
}
