package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/kernel"
	"herald/migrations"
	"herald/models"
)

// A database made from the template must be the one the migrations make: the same
// tables, columns, indexes and table options, the same rows (the goose version table's
// and what migrations seed), nothing else (views, triggers, routines), and a store on it
// must find every migration applied. Otherwise every test on Store would run on a schema
// the product never has.
func TestMigratedCopyIsAMigratedDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	migrated := func(t *testing.T, opts kernel.Options) *models.Store {
		s, err := models.Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if _, err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	compare := func(t *testing.T, copyOpts, freshOpts kernel.Options) {
		copied, err := models.Open(copyOpts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { copied.Close() })
		want := describeDatabase(t, migrated(t, freshOpts))
		got := describeDatabase(t, copied)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("a database copied from the template differs from a migrated one (-migrated +copied):\n%s", diff)
		}
		if len(got) < 30 {
			t.Errorf("the description names %d things; the comparison sees too little", len(got))
		}
		applied, fresh, err := copied.MigrateUp(ctx)
		if err != nil || applied != 0 || fresh {
			t.Errorf("migrating the copy: applied %d, fresh %v, %v; want 0, false, nil", applied, fresh, err)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		compare(t, kernel.Options{DataDir: MigratedDataDir(t), SecretKey: SecretKey},
			kernel.Options{DataDir: t.TempDir(), SecretKey: SecretKey})
	})
	t.Run("mysql", func(t *testing.T) {
		t.Parallel()
		dsn := MigratedMySQLDSN(t)
		if dsn == "" {
			t.Skip("HERALD_TEST_MYSQL_DSN not set")
		}
		compare(t, kernel.Options{MySQLDSN: dsn, SecretKey: SecretKey},
			kernel.Options{MySQLDSN: MySQLDSN(t), SecretKey: SecretKey})
	})
}

// describeDatabase returns what a database holds, one entry per table definition, other schema
// object and table's rows, keyed by what it is.
func describeDatabase(t *testing.T, s *models.Store) map[string]string {
	t.Helper()
	db := s.SQL()
	out := map[string]string{}
	var tables []string
	if s.Dialect() == migrations.MySQL {
		for _, r := range queryText(t, db, "SELECT table_name, table_type, engine, table_collation, create_options FROM information_schema.tables WHERE table_schema = DATABASE()") {
			out["table "+r[0]] = strings.Join(r[1:], " ")
			if r[1] == "BASE TABLE" {
				tables = append(tables, r[0])
			}
		}
		for _, table := range tables {
			// The definition: columns, types, defaults, indexes, charset, AUTO_INCREMENT.
			out["create "+table] = queryText(t, db, "SHOW CREATE TABLE `"+table+"`")[0][1]
		}
		for _, q := range []string{
			"SELECT 'trigger', trigger_name FROM information_schema.triggers WHERE trigger_schema = DATABASE()",
			"SELECT 'routine', routine_name FROM information_schema.routines WHERE routine_schema = DATABASE()",
			"SELECT 'event', event_name FROM information_schema.events WHERE event_schema = DATABASE()",
		} {
			for _, r := range queryText(t, db, q) {
				out[r[0]+" "+r[1]] = "present"
			}
		}
	} else {
		for _, r := range queryText(t, db, "SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master") {
			out[r[0]+" "+r[1]] = r[2] + ": " + r[3]
			if r[0] == "table" {
				tables = append(tables, r[1])
			}
		}
	}
	for _, table := range tables {
		cols := "*"
		if table == "goose_db_version" {
			cols = "id, version_id, is_applied" // not tstamp, the moment it was applied
		}
		rows := queryText(t, db, "SELECT "+cols+" FROM "+table)
		lines := make([]string, len(rows))
		for i, r := range rows {
			lines[i] = strings.Join(r, " | ")
		}
		slices.Sort(lines)
		out["rows "+table] = strings.Join(lines, "\n")
	}
	return out
}

// queryText returns every row of q as text, NULL as "NULL".
func queryText(t *testing.T, db *sql.DB, q string) [][]string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		line := make([]string, len(cols))
		for i, v := range vals {
			switch v := v.(type) {
			case nil:
				line[i] = "NULL"
			case []byte:
				line[i] = string(v)
			default:
				line[i] = fmt.Sprint(v)
			}
		}
		out = append(out, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchmarkStore measures what a test pays for testenv.Store: a fresh migrated database
// and a store on it. Run with -benchtime=20x (each database is dropped only when the
// benchmark ends).
func BenchmarkStore(b *testing.B) {
	Store(b) // the template, made once per binary, is not what a test pays
	b.ResetTimer()
	for range b.N {
		Store(b)
	}
}
