package testenv

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"herald/kernel"
	"herald/models"
)

// Helpers of the domain packages' tests that look at a store's rows directly.

// FreshOptions returns options for a new, empty database (MySQL when configured,
// SQLite in a temporary directory otherwise), so a test can open several stores on it.
func FreshOptions(t testing.TB) kernel.Options {
	t.Helper()
	return kernel.Options{MySQLDSN: MySQLDSN(t), DataDir: t.TempDir(), SecretKey: SecretKey}
}

// TwoProcesses opens two stores on one fresh, migrated database, as two processes have.
func TwoProcesses(t testing.TB) (here, there *models.Store) {
	t.Helper()
	opts := FreshOptions(t)
	for _, s := range []**models.Store{&here, &there} {
		var err error
		if *s, err = models.Open(opts); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*s).Close() })
	}
	if _, err := here.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return here, there
}

// Count runs a COUNT(*) query.
func Count(t testing.TB, s *models.Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.SQL().QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// QueryStrings runs a query and returns each row, its columns joined by a space.
func QueryStrings(t testing.TB, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]string, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.Join(vals, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// StepClock is a clock that moves only when the test says so; it starts at 09:00 UTC on
// 2 March 2026.
type StepClock struct {
	mu  sync.Mutex
	now time.Time
}

func NewStepClock() *StepClock { return &StepClock{now: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)} }

func (c *StepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *StepClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// OnBothDialects runs a test on a migrated SQLite store, and on a MySQL one when
// HERALD_TEST_MYSQL_DSN is set: LIKE is where the two dialects differ most.
func OnBothDialects(t *testing.T, test func(t *testing.T, s *models.Store)) {
	t.Helper()
	for _, dialect := range []string{"sqlite", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			opts := kernel.Options{DataDir: MigratedDataDir(t), SecretKey: SecretKey}
			if dialect == "mysql" {
				if opts.MySQLDSN = MigratedMySQLDSN(t); opts.MySQLDSN == "" {
					t.Skip("HERALD_TEST_MYSQL_DSN not set")
				}
			}
			s, err := models.Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if _, err := s.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			test(t, s)
		})
	}
}

// Row is one row of SeedRows: its values by column.
type Row map[string]any

// SeedRows writes rows into table with multi-row INSERTs (kernel.InsertRows), the
// columns those of the first row: for tests and benchmarks that need many rows of a
// given shape (messages sent at given times, alerts acknowledged after given waits)
// faster than the intake would write them.
func SeedRows(t testing.TB, s *models.Store, table string, rows []Row) {
	t.Helper()
	if len(rows) == 0 {
		return
	}
	var cols []string
	for c := range rows[0] {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	err := s.DB().InTx(context.Background(), func(tx *kernel.DB) error {
		return kernel.InsertRows(kernel.OnTx(tx.Writer(context.Background())), table, strings.Join(cols, ", "), len(rows), func(i int, args []any) []any {
			for _, c := range cols {
				args = append(args, rows[i][c])
			}
			return args
		})
	})
	if err != nil {
		t.Fatalf("seed %s: %v", table, err)
	}
}

// SentMessage is a message row delivered at At to a recipient, in a batch, perhaps a
// notice of an alert: what SeedRows needs of one, the other columns filled alike.
func SentMessage(id, batchID string, recipientID int64, alertID *int64, at time.Time) Row {
	return Row{"id": id, "batch_id": batchID, "recipient_id": recipientID, "account_id": 1, "platform": "sandbox",
		"address": "a", "msg_type": "text", "subject": "", "content": "c", "priority": "normal", "status": "sent",
		"attempts": 1, "max_attempts": 3, "class_retries": 0, "send_at": at, "claim_token": "", "error_class": "",
		"last_error": "", "provider_message_id": "", "created_at": at, "updated_at": at, "sent_at": at, "alert_id": alertID}
}

// BatchRow is a batch row made through an API key (nil: the console).
func BatchRow(id string, apiKeyID *int64, at time.Time) Row {
	return Row{"id": id, "source": "api", "api_key_id": apiKeyID, "platform": "sandbox", "account_id": 1,
		"priority": "normal", "skipped": "[]", "rejected": "[]", "created_at": at}
}
