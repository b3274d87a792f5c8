package models_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gorm.io/gorm/schema"

	"herald/access"
	"herald/alert"
	"herald/audit"
	"herald/chatgroups"
	"herald/directory"
	"herald/duty"
	"herald/inbound"
	"herald/incident"
	"herald/inhibit"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/migrations"
	"herald/models"
	"herald/phone"
	"herald/recall"
	"herald/reports"
	"herald/sending"
	"herald/silence"
	"herald/templates"
)

// tableColumns maps a table name to its sorted column names.
type tableColumns map[string][]string

// gormModels is every model the store reads or writes through GORM.
var gormModels = []any{
	&access.User{}, &access.Session{}, &kernel.ThrottleWindow{}, &access.APIKey{},
	&directory.Recipient{}, &duty.DutySlot{}, &duty.DutyOverride{}, &duty.Holiday{},
	&templates.Template{}, &sending.Account{}, &models.Batch{}, &models.Message{},
	&models.Attempt{}, &audit.Entry{}, &models.IdempotencyKey{}, &models.MessageStat{},
	&kernel.Setting{}, &duty.Rotation{}, &duty.DutyFeed{}, &duty.DutySwap{}, &models.DutyReminder{}, &models.CallbackEvent{},
	&kernel.ChangeCounter{}, &recall.RecallRequest{}, &models.DailyContent{}, &templates.TemplateVersion{},
	&alert.EscalationPolicy{}, &alert.Alert{}, &alert.AlertStep{}, &silence.Silence{}, &silence.MessageSilence{},
	&inbound.Integration{}, &inbound.Received{}, &inbound.OpenKey{}, &inbound.Heartbeat{},
	&phone.Call{},
	&chatgroups.ChatGroup{},
	&incident.Incident{}, &inhibit.Rule{}, &inhibit.Inhibition{}, &reports.Schedule{}, &reports.NoticeDay{}, &reports.TalliedDay{},
}

// designTables are the tables the migrations create, by the names operators and tools rely on.
var designTables = []string{
	"console_users", "api_keys", "recipients", "duty_slots", "duty_overrides", "holidays",
	"templates", "accounts", "batches", "messages", "attempts", "audit_log",
}

// modelSchema derives the tables and columns GORM expects from the models.
func modelSchema(t *testing.T) tableColumns {
	t.Helper()
	out := tableColumns{}
	for _, m := range gormModels {
		s, err := schema.Parse(m, &sync.Map{}, schema.NamingStrategy{})
		if err != nil {
			t.Fatalf("parse %T: %v", m, err)
		}
		if _, dup := out[s.Table]; dup {
			t.Fatalf("two models map to table %s", s.Table)
		}
		var cols []string
		for _, f := range s.Fields {
			if f.DBName != "" {
				cols = append(cols, f.DBName)
			}
		}
		slices.Sort(cols)
		out[s.Table] = slices.Compact(cols)
	}
	return out
}

// migratedSchema opens a store, migrates it and reads back its tables and columns,
// leaving out goose's bookkeeping table.
func migratedSchema(t *testing.T, opts kernel.Options) (*models.Store, tableColumns) {
	t.Helper()
	s, err := models.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	db := s.SQL()
	out := tableColumns{}
	switch s.Dialect() {
	case migrations.SQLite:
		tables := testenv.QueryStrings(t, db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'goose_db_version'")
		for _, table := range tables {
			rows, err := db.Query(fmt.Sprintf("PRAGMA table_info(%q)", table))
			if err != nil {
				t.Fatal(err)
			}
			var cols []string
			for rows.Next() {
				var (
					cid, notNull, pk int
					name, typ        string
					dflt             sql.NullString
				)
				if err := rows.Scan(&cid, &name, &typ, &notNull, &dflt, &pk); err != nil {
					t.Fatal(err)
				}
				cols = append(cols, name)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			slices.Sort(cols)
			out[table] = cols
		}
	default:
		// Generated columns are left out, as SQLite's table_info leaves them out: they
		// exist for an index (messages.digest_waiting), and no model writes them.
		rows, err := db.Query("SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name <> 'goose_db_version' AND extra NOT LIKE '%GENERATED%'")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var table, col string
			if err := rows.Scan(&table, &col); err != nil {
				t.Fatal(err)
			}
			out[table] = append(out[table], col)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		for table := range out {
			slices.Sort(out[table])
		}
	}
	return s, out
}

// TestMigrationsMatchModels checks that the SQL migrations of both dialects create
// exactly the tables and columns the GORM models use.
func TestMigrationsMatchModels(t *testing.T) {
	t.Parallel()
	want := modelSchema(t)
	for _, name := range designTables {
		if _, ok := want[name]; !ok {
			t.Errorf("no model maps to table %s, which the schema names", name)
		}
	}

	var sqliteSchema, mysqlSchema tableColumns
	t.Run("sqlite", func(t *testing.T) {
		_, sqliteSchema = migratedSchema(t, kernel.Options{DataDir: t.TempDir(), SecretKey: testenv.SecretKey})
		if diff := cmp.Diff(want, sqliteSchema); diff != "" {
			t.Errorf("sqlite migrations differ from the GORM models (-want +got):\n%s", diff)
		}
	})
	t.Run("mysql", func(t *testing.T) {
		dsn := testenv.MySQLDSN(t)
		if dsn == "" {
			t.Skip("HERALD_TEST_MYSQL_DSN not set")
		}
		s, got := migratedSchema(t, kernel.Options{MySQLDSN: dsn, SecretKey: testenv.SecretKey})
		mysqlSchema = got
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("mysql migrations differ from the GORM models (-want +got):\n%s", diff)
		}

		rows, err := s.SQL().Query("SELECT table_name, table_collation FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name <> 'goose_db_version'")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var table string
			var collation sql.NullString
			if err := rows.Scan(&table, &collation); err != nil {
				t.Fatal(err)
			}
			n++
			if !strings.HasPrefix(collation.String, "utf8mb4") {
				t.Errorf("table %s has collation %q, want utf8mb4", table, collation.String)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if n != len(got) {
			t.Errorf("collation checked on %d tables, want %d", n, len(got))
		}
	})
	if sqliteSchema != nil && mysqlSchema != nil {
		if diff := cmp.Diff(sqliteSchema, mysqlSchema); diff != "" {
			t.Errorf("mysql and sqlite migrations differ (-sqlite +mysql):\n%s", diff)
		}
	}
}
