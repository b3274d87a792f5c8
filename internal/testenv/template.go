package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"herald/kernel"
	"herald/models"
)

// Migrating a database runs every migration, and on MySQL each ALTER rebuilds its table:
// about a second and a half per test. So each test binary migrates one template database
// once, captures what the migrations left (every table's definition and the rows they
// seed, the goose version table's included) and drops it; each test's database is then
// made from the capture. TestMigratedCopyIsAMigratedDatabase compares a copy with a
// freshly migrated database, so that a migration adding something the copy leaves out
// (a view, a trigger) fails there instead of in some other test.

// mysqlTemplate is a migrated MySQL database as statements that rebuild it.
type mysqlTemplate struct {
	// creates are the tables' CREATE TABLE statements, each with a %s where the
	// database's name goes.
	creates []string
	// seeds insert the rows the migrations wrote: one statement and its arguments per
	// table that has rows.
	seeds []seed
}

type seed struct {
	query string // with a %s where the database's name goes
	args  []any
}

var (
	mysqlTplMu sync.Mutex
	mysqlTpl   *mysqlTemplate

	sqliteTplMu sync.Mutex
	sqliteTpl   []byte
)

// mysqlAdmin is the test binary's connection pool to the MySQL server, with no database
// selected; it creates and drops the tests' databases.
var (
	mysqlAdminMu sync.Mutex
	mysqlAdminDB *sql.DB
)

// mysqlServer returns the parsed HERALD_TEST_MYSQL_DSN with no database selected and the
// pool on it, or nil when the variable is not set.
func mysqlServer(t testing.TB) (*mysql.Config, *sql.DB) {
	t.Helper()
	base := os.Getenv("HERALD_TEST_MYSQL_DSN")
	if base == "" {
		return nil, nil
	}
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		t.Fatalf("HERALD_TEST_MYSQL_DSN: %v", err)
	}
	cfg.DBName = ""
	mysqlAdminMu.Lock()
	defer mysqlAdminMu.Unlock()
	if mysqlAdminDB == nil {
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Fatalf("open mysql: %v", err)
		}
		mysqlAdminDB = db
	}
	return cfg, mysqlAdminDB
}

// createDatabase creates a database named name as the tests' databases are created.
func createDatabase(admin *sql.DB, name string) error {
	_, err := admin.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
	return err
}

// databaseDSN is the DSN of database name on the server of cfg, with the settings Herald
// is run with.
func databaseDSN(server *mysql.Config, name string) string {
	cfg := server.Clone()
	cfg.DBName = name
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["charset"] = "utf8mb4"
	return cfg.FormatDSN()
}

// templateOfMySQL returns the test binary's captured MySQL template, migrating it the
// first time.
func templateOfMySQL(t testing.TB, server *mysql.Config, admin *sql.DB) *mysqlTemplate {
	t.Helper()
	mysqlTplMu.Lock()
	defer mysqlTplMu.Unlock()
	if mysqlTpl != nil {
		return mysqlTpl
	}
	// The name starts herald_test_ like every test database, so that .ci/run drops one
	// left behind by a binary killed between creating and dropping it.
	name := "herald_test_tpl_" + randomHex(6)
	if err := createDatabase(admin, name); err != nil {
		t.Fatalf("create template database: %v", err)
	}
	defer func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
			t.Logf("drop template database %s: %v", name, err)
		}
	}()
	s, err := models.Open(kernel.Options{MySQLDSN: databaseDSN(server, name), SecretKey: SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate template database: %v", err)
	}
	tpl, err := captureMySQL(s.SQL())
	if err != nil {
		t.Fatalf("capture template database: %v", err)
	}
	mysqlTpl = tpl
	return tpl
}

// captureMySQL reads the tables of db's database and their rows.
func captureMySQL(db *sql.DB) (*mysqlTemplate, error) {
	var tables []string
	rows, err := db.Query("SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var name, kind string
		if err := rows.Scan(&name, &kind); err != nil {
			rows.Close()
			return nil, err
		}
		if kind != "BASE TABLE" {
			rows.Close()
			return nil, fmt.Errorf("%s is a %s: the template copies tables only", name, kind)
		}
		tables = append(tables, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	tpl := &mysqlTemplate{}
	for _, table := range tables {
		var got, create string
		if err := db.QueryRow("SHOW CREATE TABLE `"+table+"`").Scan(&got, &create); err != nil {
			return nil, err
		}
		head := "CREATE TABLE `" + table + "` "
		if !strings.HasPrefix(create, head) {
			return nil, fmt.Errorf("SHOW CREATE TABLE %s: unexpected %.60q", table, create)
		}
		tpl.creates = append(tpl.creates, "CREATE TABLE `%s`.`"+table+"` "+strings.ReplaceAll(create[len(head):], "%", "%%"))
		sd, err := captureRows(db, table)
		if err != nil {
			return nil, err
		}
		if sd != nil {
			tpl.seeds = append(tpl.seeds, *sd)
		}
	}
	return tpl, nil
}

// captureRows returns an INSERT of table's rows, or nil when it has none.
func captureRows(db *sql.DB, table string) (*seed, error) {
	rows, err := db.Query("SELECT * FROM `" + table + "`")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var args []any
	var tuples []string
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		args = append(args, vals...)
		tuples = append(tuples, tuple)
	}
	if err := rows.Err(); err != nil || len(tuples) == 0 {
		return nil, err
	}
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = "`" + c + "`"
	}
	return &seed{
		query: "INSERT INTO `%s`.`" + table + "` (" + strings.Join(quoted, ", ") + ") VALUES " + strings.Join(tuples, ", "),
		args:  args,
	}, nil
}

// MigratedMySQLDSN returns a DSN for a new MySQL database in the state the migrations
// leave a new database (made from the test binary's template), dropped when the test
// ends, or "" when HERALD_TEST_MYSQL_DSN is not set. A process started on it applies no
// migration and, finding the database not new, seeds no demo and no holiday calendar:
// use MySQLDSN for a test of the first start.
func MigratedMySQLDSN(t testing.TB) string {
	t.Helper()
	server, admin := mysqlServer(t)
	if server == nil {
		return ""
	}
	tpl := templateOfMySQL(t, server, admin)
	name := newDatabase(t, admin)
	// Several tables at once: each CREATE TABLE mostly waits for the server's disk.
	errs := make(chan error, len(tpl.creates))
	sem := make(chan struct{}, 6)
	for _, create := range tpl.creates {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			_, err := admin.Exec(fmt.Sprintf(create, name))
			errs <- err
		}()
	}
	for range tpl.creates {
		if err := <-errs; err != nil {
			t.Fatalf("copy the template database: %v", err)
		}
	}
	for _, sd := range tpl.seeds {
		if _, err := admin.Exec(fmt.Sprintf(sd.query, name), sd.args...); err != nil {
			t.Fatalf("copy the template database's rows: %v", err)
		}
	}
	return databaseDSN(server, name)
}

// MigratedDataDir returns a new data directory holding the embedded SQLite database in
// the state the migrations leave a new one (a copy of the test binary's template),
// removed when the test ends.
func MigratedDataDir(t testing.TB) string {
	t.Helper()
	tpl := templateOfSQLite(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, kernel.SQLiteFile), tpl, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// templateOfSQLite returns the test binary's migrated SQLite database file, migrating it
// the first time.
func templateOfSQLite(t testing.TB) []byte {
	t.Helper()
	sqliteTplMu.Lock()
	defer sqliteTplMu.Unlock()
	if sqliteTpl != nil {
		return sqliteTpl
	}
	dir, err := os.MkdirTemp("", "herald-test-tpl-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := models.Open(kernel.Options{DataDir: dir, SecretKey: SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(context.Background()); err != nil {
		s.Close()
		t.Fatalf("migrate template database: %v", err)
	}
	// Everything into the database file, so that the file alone is the database.
	if _, err := s.SQL().Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		s.Close()
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, kernel.SQLiteFile))
	if err != nil {
		t.Fatal(err)
	}
	sqliteTpl = b
	return b
}
