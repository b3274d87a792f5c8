package models

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"herald/kernel"

	"gorm.io/gorm/schema"
)

// modelRows writes new rows of one model with insertRows: every column GORM maps the
// model to, in the model's field order, except an auto-increment id, which the database
// gives. The intake writes its batch and audit rows this way. GORM's Create builds the
// statement clause by clause for every call and, on MariaDB, reads each new id back
// with RETURNING: for a single-recipient request those two rows cost the web process
// more than its message row did.
type modelRows[T any] struct {
	table   string
	columns string
	fields  []*schema.Field
	// stamps are the fields GORM sets to now on create when they are zero (CreatedAt).
	stamps []*schema.Field
}

// newModelRows reads T's columns as GORM maps them. A column with a database default
// other than an auto-increment id panics: Create leaves a zero value out for the
// default to apply, and these rows would write the zero.
func newModelRows[T any](table string) *modelRows[T] {
	s, err := schema.Parse(new(T), &sync.Map{}, schema.NamingStrategy{})
	if err != nil {
		panic(fmt.Sprintf("models: parse %T: %v", *new(T), err))
	}
	w := &modelRows[T]{table: table}
	var names []string
	for _, f := range s.Fields {
		if f.DBName == "" || !f.Creatable {
			continue
		}
		if f.AutoIncrement {
			continue
		}
		if f.HasDefaultValue {
			panic(fmt.Sprintf("models: %s.%s has a database default", table, f.DBName))
		}
		if (f.AutoCreateTime != 0 || f.AutoUpdateTime != 0) && f.FieldType == reflect.TypeFor[time.Time]() {
			w.stamps = append(w.stamps, f)
		}
		w.fields = append(w.fields, f)
		names = append(names, f.DBName)
	}
	w.columns = strings.Join(names, ", ")
	return w
}

// insert writes rows, setting a zero creation time to now on the row as Create does.
func (w *modelRows[T]) insert(to rowWriter, rows []*T) error {
	ctx := context.Background() // schema.Field's accessors take a context and ignore it
	now := kernel.Now()
	return insertRows(to, w.table, w.columns, len(rows), func(i int, args []any) []any {
		row := reflect.ValueOf(rows[i]).Elem()
		for _, f := range w.stamps {
			if _, zero := f.ValueOf(ctx, row); zero {
				_ = f.Set(ctx, row, now)
			}
		}
		for _, f := range w.fields {
			v, _ := f.ValueOf(ctx, row)
			args = append(args, v)
		}
		return args
	})
}

var (
	batchRows = newModelRows[Batch]("batches")
	auditRows = newModelRows[AuditEntry]("audit_log")
)

// insertBatches writes new batches.
func insertBatches(w rowWriter, batches ...*Batch) error { return batchRows.insert(w, batches) }

// insertAudit writes audit entries, each at now when it has no time, with its values cut
// to their columns and any URL's credentials and query left out (see Redact).
func insertAudit(w rowWriter, entries ...*AuditEntry) error {
	now := kernel.Now()
	for _, e := range entries {
		if e.At.IsZero() {
			e.At = now
		}
		e.cut()
	}
	return auditRows.insert(w, entries)
}
