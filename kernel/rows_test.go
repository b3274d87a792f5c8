package kernel

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// boundWriter records the statements InsertRows gives it, and bounds their placeholders.
type boundWriter struct {
	max   int
	stmts []string
	args  [][]any
}

func (w *boundWriter) Insert(stmt string, args []any) error {
	w.stmts, w.args = append(w.stmts, stmt), append(w.args, args)
	return nil
}

func (w *boundWriter) MaxParams() int { return w.max }

// TestInsertRowsKeepsToTheWritersBound: a writer that bounds a statement's placeholders
// gets statements of at most that many, whole rows each, every row once and in order;
// one with no bound gets InsertChunk rows a statement.
func TestInsertRowsKeepsToTheWritersBound(t *testing.T) {
	values := func(i int, args []any) []any { return append(args, i, fmt.Sprint("b", i), i*10) }
	for _, tt := range []struct {
		max, rows int
		want      []int // rows per statement
	}{
		{max: 10, rows: 10, want: []int{3, 3, 3, 1}},
		{max: 2, rows: 3, want: []int{1, 1, 1}}, // a row wider than the bound still goes, alone
		{max: 0, rows: InsertChunk + 1, want: []int{InsertChunk, 1}},
	} {
		w := &boundWriter{max: tt.max}
		if err := InsertRows(w, "t", "a, b, c", tt.rows, values); err != nil {
			t.Fatal(err)
		}
		var got []int
		var all []any
		for i, stmt := range w.stmts {
			n := strings.Count(stmt, "(?, ?, ?)")
			got = append(got, n)
			if len(w.args[i]) != 3*n {
				t.Errorf("max %d: statement %d has %d rows and %d values", tt.max, i, n, len(w.args[i]))
			}
			all = append(all, w.args[i]...)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("max %d, %d rows: rows per statement %v, want %v", tt.max, tt.rows, got, tt.want)
		}
		for i := range tt.rows {
			if len(all) < 3*i+3 || all[3*i] != i || all[3*i+1] != fmt.Sprint("b", i) {
				t.Fatalf("max %d: row %d is not where it belongs: %v", tt.max, i, all[min(3*i, len(all)):min(3*i+3, len(all))])
			}
		}
	}
}

// TestSQLiteInsertsHoldFewPlaceholders: on SQLite a transaction's writer bounds its
// statements (the driver's cost grows with the square of a statement's placeholders),
// and rows written in many statements all arrive.
func TestSQLiteInsertsHoldFewPlaceholders(t *testing.T) {
	db, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "rows.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("CREATE TABLE t (a INTEGER, b TEXT, c INTEGER)").Error; err != nil {
		t.Fatal(err)
	}
	w := OnTx(db)
	b, ok := w.(paramBound)
	if !ok {
		t.Fatal("the SQLite writer does not bound its statements' placeholders")
	}
	if got := b.MaxParams(); got != sqliteMaxParams {
		t.Fatalf("the SQLite writer bounds a statement at %d placeholders, want %d", got, sqliteMaxParams)
	}
	const n = 1000
	if err := InsertRows(w, "t", "a, b, c", n, func(i int, args []any) []any { return append(args, i, fmt.Sprint("b", i), i*10) }); err != nil {
		t.Fatal(err)
	}
	var count, sum int64
	if err := db.Raw("SELECT COUNT(*), SUM(c) FROM t WHERE b = 'b' || a").Row().Scan(&count, &sum); err != nil {
		t.Fatal(err)
	}
	if count != n || sum != 10*n*(n-1)/2 {
		t.Errorf("%d rows (sum %d) arrived whole, want %d (sum %d)", count, sum, n, 10*n*(n-1)/2)
	}
}

type rowsTestRow struct {
	ID   int64 `gorm:"primaryKey"`
	A    int
	B    string
	C    int
	Note string
}

// TestCreateRowsOnSQLiteHoldsFewPlaceholders: GORM's batches on SQLite hold as many rows
// as sqliteMaxParams placeholders do (here five columns, the id included: 60 rows a
// statement), and every row arrives.
func TestCreateRowsOnSQLiteHoldsFewPlaceholders(t *testing.T) {
	db, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "rows.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AutoMigrate(&rowsTestRow{}); err != nil {
		t.Fatal(err)
	}
	var statements int
	if err := db.Callback().Create().After("gorm:create").Register("count_statements", func(*gorm.DB) { statements++ }); err != nil {
		t.Fatal(err)
	}
	rows := make([]rowsTestRow, 1000)
	for i := range rows {
		rows[i] = rowsTestRow{A: i, B: fmt.Sprint("b", i), C: i * 10}
	}
	if err := CreateRows(db, rows); err != nil {
		t.Fatal(err)
	}
	perStatement := sqliteMaxParams / 5
	if want := (len(rows) + perStatement - 1) / perStatement; statements != want {
		t.Errorf("%d statements for %d rows, want %d of %d rows", statements, len(rows), want, perStatement)
	}
	var count int64
	if err := db.Model(&rowsTestRow{}).Where("b = 'b' || a").Count(&count).Error; err != nil || count != int64(len(rows)) {
		t.Errorf("%d rows arrived (%v), want %d", count, err, len(rows))
	}
}
