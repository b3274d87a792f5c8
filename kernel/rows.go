package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// RowWriter runs the INSERT statements that write new rows: on a transaction, each at
// once (OnTx); in a script, gathered for one call to the database (models/one_trip.go).
type RowWriter interface {
	Insert(stmt string, args []any) error
}

// txWriter runs each INSERT at once on a transaction. The statement goes straight to
// the transaction's connection: GORM's Exec would walk it and every one of its values
// again, which for a large intake allocated more than GORM's own Create.
type txWriter struct{ tx *gorm.DB }

// OnTx is the RowWriter of a transaction (or of a database handle, outside one).
func OnTx(tx *gorm.DB) RowWriter { return txWriter{tx} }

func (w txWriter) Insert(stmt string, args []any) error {
	_, err := w.tx.Statement.ConnPool.ExecContext(w.tx.Statement.Context, stmt, args...)
	return err
}

// MaxParams bounds the placeholders of one statement on SQLite, whose driver matches
// each placeholder to its value by a scan of all the statement's values: a statement
// of n placeholders costs it n²/2 comparisons, a second and more of CPU for an intake
// of 5,000 rows in statements of InsertChunk rows. Statements of about 300 placeholders
// keep that below the cost of running one more statement.
func (w txWriter) MaxParams() int { return maxParams(w.tx) }

// sqliteMaxParams is the placeholders of one statement on SQLite.
const sqliteMaxParams = 300

// maxParams is the most placeholders one statement should hold on tx's database; 0
// when only InsertChunk bounds a statement.
func maxParams(tx *gorm.DB) int {
	if tx.Dialector.Name() == "sqlite" {
		return sqliteMaxParams
	}
	return 0
}

// paramBound is a RowWriter whose statements should hold at most MaxParams placeholders
// (none when 0).
type paramBound interface{ MaxParams() int }

// chunkRows is how many rows of width columns one INSERT holds: InsertChunk, or fewer
// under a bound of limit placeholders (none when 0), at least one.
func chunkRows(limit, width int) int {
	if limit <= 0 || width <= 0 {
		return InsertChunk
	}
	return max(1, min(InsertChunk, limit/width))
}

// InsertRows writes n rows into table with one multi-row INSERT per InsertChunk of them
// (fewer where the writer bounds a statement's placeholders); values appends row i's
// values, in the order of columns, to args.
func InsertRows(w RowWriter, table, columns string, n int, values func(i int, args []any) []any) error {
	width := strings.Count(columns, ",") + 1
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	chunk := InsertChunk
	if b, ok := w.(paramBound); ok {
		chunk = chunkRows(b.MaxParams(), width)
	}
	for start := 0; start < n; start += chunk {
		end := min(start+chunk, n)
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
		if err := w.Insert(stmt.String(), args); err != nil {
			return err
		}
	}
	return nil
}

// InsertChunk bounds a multi-row INSERT well below MySQL's placeholder limit.
const InsertChunk = 500

// CreateRows is GORM's CreateInBatches of rows (a slice of a model) in statements of as
// many rows as InsertRows would put in one (see txWriter.MaxParams).
func CreateRows(tx *gorm.DB, rows any) error {
	size := InsertChunk
	if limit := maxParams(tx); limit > 0 {
		stmt := &gorm.Statement{DB: tx}
		if err := stmt.Parse(rows); err == nil {
			size = chunkRows(limit, len(stmt.Schema.DBNames))
		}
	}
	return tx.CreateInBatches(rows, size).Error
}

// ModelRows writes new rows of one model with InsertRows: every column GORM maps the
// model to, in the model's field order, except an auto-increment id, which the database
// gives. The intake writes its batch and audit rows this way. GORM's Create builds the
// statement clause by clause for every call and, on MariaDB, reads each new id back
// with RETURNING: for a single-recipient request those two rows cost the web process
// more than its message row did.
type ModelRows[T any] struct {
	table   string
	columns string
	fields  []*schema.Field
	// stamps are the fields GORM sets to now on create when they are zero (CreatedAt).
	stamps []*schema.Field
}

// NewModelRows reads T's columns as GORM maps them. A column with a database default
// other than an auto-increment id panics: Create leaves a zero value out for the
// default to apply, and these rows would write the zero.
func NewModelRows[T any](table string) *ModelRows[T] {
	s, err := schema.Parse(new(T), &sync.Map{}, schema.NamingStrategy{})
	if err != nil {
		panic(fmt.Sprintf("kernel: parse %T: %v", *new(T), err))
	}
	w := &ModelRows[T]{table: table}
	var names []string
	for _, f := range s.Fields {
		if f.DBName == "" || !f.Creatable {
			continue
		}
		if f.AutoIncrement {
			continue
		}
		if f.HasDefaultValue {
			panic(fmt.Sprintf("kernel: %s.%s has a database default", table, f.DBName))
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

// Insert writes rows, setting a zero creation time to now on the row as Create does.
func (w *ModelRows[T]) Insert(to RowWriter, rows []*T) error {
	ctx := context.Background() // schema.Field's accessors take a context and ignore it
	now := Now()
	return InsertRows(to, w.table, w.columns, len(rows), func(i int, args []any) []any {
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

// ScanJSON reads a JSON column into dst: NULL and empty leave it as it is.
func ScanJSON(src, dst any) error {
	var b []byte
	switch v := src.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	case nil:
		return nil
	default:
		return fmt.Errorf("kernel: cannot scan %T as JSON", src)
	}
	if len(b) == 0 {
		return nil
	}
	return json.Unmarshal(b, dst)
}

// LikeMatch says where in a column the searched text must appear.
type LikeMatch int

// Where a LIKE search matches.
const (
	// LikeContains matches the text anywhere in the column.
	LikeContains LikeMatch = iota
	// LikePrefix matches the text at the column's start.
	LikePrefix
)

// likeEscaper makes text literal inside a LIKE pattern escaped with '!'. Not the
// backslash: MySQL escapes with it by default and SQLite has no default, and inside a
// SQL string literal the two read a backslash differently, so neither could spell the
// same ESCAPE clause.
var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")

// WhereLike narrows q to rows where any of columns holds text literally: a person's
// search for "a_b" or "50%" must not turn _ and % into wildcards. Every LIKE in the
// store goes through here so that it matches the same on SQLite and MySQL.
func WhereLike(q *gorm.DB, match LikeMatch, text string, columns ...string) *gorm.DB {
	pattern := likeEscaper.Replace(text) + "%"
	if match == LikeContains {
		pattern = "%" + pattern
	}
	conds := make([]string, len(columns))
	args := make([]any, len(columns))
	for i, column := range columns {
		conds[i] = column + " LIKE ? ESCAPE '!'"
		args[i] = pattern
	}
	return q.Where("("+strings.Join(conds, " OR ")+")", args...)
}
