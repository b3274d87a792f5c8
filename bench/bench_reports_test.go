package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/directory"
	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
	"herald/reports"
)

// BenchmarkReports times the three reports on MySQL with 1,000,000 delivered messages
// and 100,000 alerts (HERALD_BENCH_REPORT_MESSAGES, HERALD_BENCH_REPORT_ALERTS) to 300
// people spread over 2026, written with multi-row INSERTs. Each report over one month
// (October, a twelfth of the rows) runs ten times, its median and slowest reported;
// then each once over the whole year, every row in range; then the database's plan of
// each of the reports' queries. HERALD_BENCH_REPORT_SEEDED_DSN names a database to keep:
// an empty one is seeded, one an earlier run seeded is measured as it is. Before the reports, the sweep's pass tallies every
// closed date for the interruptions report, its time reported on a line of its own.
// Lines:
//
//	reports month response_p50_ms=… response_max_ms=… … duty_max_ms=…
//	reports year response_ms=… response_by_person_ms=… interruptions_ms=… duty_ms=…
//	reports tally dates=… secs=…
func BenchmarkReports(b *testing.B) {
	needMySQLAndRedis(b)
	messages, alerts := envInt("HERALD_BENCH_REPORT_MESSAGES", 1000000), envInt("HERALD_BENCH_REPORT_ALERTS", 100000)
	ctx := context.Background()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		b.Fatal(err)
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).UTC()
	var store *models.Store
	var ids []int64
	if dsn := os.Getenv("HERALD_BENCH_REPORT_SEEDED_DSN"); dsn != "" {
		// A database an earlier run seeded: measured as it is, not seeded again.
		if store, err = models.Open(kernel.Options{MySQLDSN: dsn, SecretKey: testenv.SecretKey}); err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		if _, err := store.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		var seeded int
		if err := store.SQL().QueryRow("SELECT COUNT(*) FROM messages").Scan(&seeded); err != nil {
			b.Fatal(err)
		}
		if seeded == 0 {
			// An empty database: seeded once, and kept for the runs after.
			ids = seedReportRows(b, store, from, int64(365*24*time.Hour), messages, alerts)
		} else {
			for _, n := range []*int{&messages, &alerts} {
				table := map[*int]string{&messages: "messages", &alerts: "alerts"}[n]
				if err := store.SQL().QueryRow("SELECT COUNT(*) FROM " + table).Scan(n); err != nil {
					b.Fatal(err)
				}
			}
			list, err := store.Directory().ActiveRecipients(ctx, 1000)
			if err != nil {
				b.Fatal(err)
			}
			for _, p := range list {
				ids = append(ids, p.ID)
			}
		}
	} else {
		store = testenv.Store(b)
		ids = seedReportRows(b, store, from, int64(365*24*time.Hour), messages, alerts)
	}

	svc := reports.NewService(reports.Config{Store: reports.NewStore(store.DB()), Duty: store.Duty(), Staff: store.Directory(),
		Policies: alert.Of(store), Location: loc, Now: func() time.Time { return from.Add(400 * 24 * time.Hour) }})
	// The sweep's pass tallies the closed dates ahead of the reports, a bounded number a
	// pass: here until none is left, as a process would over its first minutes.
	started, tallied := time.Now(), 0
	for {
		n, err := svc.TallyClosedDays(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if tallied += n; n == 0 {
			break
		}
	}
	tallyTook := time.Since(started)
	month, err := svc.Range("2026-10-01", "2026-10-31")
	if err != nil {
		b.Fatal(err)
	}
	year, err := svc.Range("2026-01-01", "2026-12-31")
	if err != nil {
		b.Fatal(err)
	}
	admin := audit.Actor{Name: "bench", Type: audit.ActorUser}
	var r reports.Range
	runs := map[string]func() error{
		"response": func() error { _, err := svc.Response(ctx, admin, r, reports.ByPolicy); return err },
		"response_by_person": func() error {
			_, err := svc.Response(ctx, admin, r, reports.ByPerson)
			return err
		},
		"interruptions": func() error { _, err := svc.Interruptions(ctx, admin, r, ""); return err },
		"duty":          func() error { _, err := svc.Duty(ctx, r); return err },
	}
	names := []string{"response", "response_by_person", "interruptions", "duty"}
	b.ResetTimer()
	line, r := []string{"reports month"}, month
	for _, name := range names {
		var took []time.Duration
		for range max(b.N, 10) {
			start := time.Now()
			if err := runs[name](); err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		p50, worst := took[len(took)/2], took[len(took)-1]
		b.ReportMetric(float64(p50.Microseconds())/1000, name+"_p50_ms")
		line = append(line, fmt.Sprintf("%s_p50_ms=%.0f %s_max_ms=%.0f", name, float64(p50.Microseconds())/1000, name, float64(worst.Microseconds())/1000))
	}
	b.StopTimer()
	whole, r := []string{"reports year"}, year
	for _, name := range names {
		start := time.Now()
		if err := runs[name](); err != nil {
			b.Fatal(err)
		}
		whole = append(whole, fmt.Sprintf("%s_ms=%.0f", name, float64(time.Since(start).Microseconds())/1000))
	}
	fmt.Fprintf(os.Stderr, "\n%s\n%s\nreports tally dates=%d secs=%.1f\n(%d messages, %d alerts, %d people)\n%s", strings.Join(line, " "),
		strings.Join(whole, " "), tallied, tallyTook.Seconds(), messages, alerts, len(ids), explainReports(b, store.SQL(), month))
}

// seedReportRows writes people, batches, alerts and delivered messages spread over the
// span from from, with multi-row INSERTs, and returns the people's ids. Two messages in
// ten are notices of an alert; the others come three to a batch.
func seedReportRows(b *testing.B, store *models.Store, from time.Time, span int64, messages, alerts int) []int64 {
	ctx := context.Background()
	people := make([]directory.Recipient, 300)
	for i := range people {
		people[i] = directory.Recipient{ExternalID: fmt.Sprintf("R%04d", i), Name: fmt.Sprintf("R%04d", i), OrgType: directory.HeadOffice,
			Department: fmt.Sprintf("dept-%d", i%12), Active: true}
	}
	if _, err := store.Directory().UpsertRecipients(ctx, people); err != nil {
		b.Fatal(err)
	}
	list, err := store.Directory().ActiveRecipients(ctx, 1000)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]int64, len(list))
	for i, p := range list {
		ids[i] = p.ID
	}
	rng := rand.New(rand.NewPCG(1, 2))
	at := func() time.Time { return from.Add(time.Duration(rng.Int64N(span))).Truncate(time.Microsecond) }
	started := time.Now()
	// Statement by statement, each committing on its own: one transaction of a million
	// rows would only grow the undo log. The secondary indexes of the two large tables
	// are built once after the rows are in, not row by row.
	restore := dropSecondaryIndexes(b, store.SQL(), "messages", "alerts")
	err = func() error {
		w := kernel.OnTx(store.DB().Writer(ctx))
		batches := alerts + (messages-2*alerts)/3 + 1
		if err := kernel.InsertRows(w, "batches", "id, source, platform, account_id, priority, skipped, rejected, created_at", batches,
			func(i int, args []any) []any {
				return append(args, fmt.Sprintf("rb-%07d", i), "api", "sandbox", 1, "normal", "[]", "[]", from)
			}); err != nil {
			return err
		}
		opened := make([]time.Time, alerts)
		if err := kernel.InsertRows(w, "alerts", "id, batch_id, policy, policy_copy, state, step, round, account_id, opened_at, acknowledged_at, resolved_at, source, text",
			alerts, func(i int, args []any) []any {
				opened[i] = at()
				state, step, round := alert.AlertOpen, 1, 1
				var acked, resolved *time.Time
				switch x := rng.IntN(10); {
				case x < 6:
					a := opened[i].Add(time.Duration(rng.IntN(600)) * time.Second)
					acked, state = &a, alert.AlertAcknowledged
					if x < 4 {
						r := a.Add(time.Duration(rng.IntN(3600)) * time.Second)
						resolved, state = &r, alert.AlertResolved
					}
				case x < 7:
					state, step, round = alert.AlertExhausted, 3, 2
				case x < 8:
					step = 2
				}
				return append(args, int64(i+1), fmt.Sprintf("rb-%07d", i), fmt.Sprintf("policy-%d", i%20), "{}", state, step, round, 1,
					opened[i], acked, resolved, fmt.Sprintf("integration-%d", i%10), "t")
			}); err != nil {
			return err
		}
		return kernel.InsertRows(w, "messages", "id, batch_id, recipient_id, account_id, platform, address, msg_type, subject, content, priority, "+
			"status, attempts, max_attempts, class_retries, send_at, claim_token, error_class, last_error, provider_message_id, created_at, updated_at, sent_at, alert_id",
			messages, func(i int, args []any) []any {
				batch, sentAt := "", at()
				var alertID *int64
				if i < 2*alerts {
					id := int64(i/2 + 1)
					alertID, batch, sentAt = &id, fmt.Sprintf("rb-%07d", i/2), opened[i/2].Add(time.Duration(i%2)*5*time.Minute)
				} else {
					batch = fmt.Sprintf("rb-%07d", alerts+(i-2*alerts)/3)
				}
				return append(args, fmt.Sprintf("rm-%08d", i), batch, ids[rng.IntN(len(ids))], 1, "sandbox", "a", "text", "", "c", "normal",
					"sent", 1, 3, 0, sentAt, "", "", "", "", sentAt, sentAt, sentAt, alertID)
			})
	}()
	if err != nil {
		b.Fatal(err)
	}
	restore()
	if _, err := store.SQL().Exec("ANALYZE TABLE messages, alerts"); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "\nseeded %d messages and %d alerts in %s\n", messages, alerts, time.Since(started).Round(time.Second))
	return ids
}

// dropSecondaryIndexes drops the secondary indexes of the tables (MySQL) and returns
// what builds them again, each as it was: its columns in order, with their prefix
// lengths, and unique or not.
func dropSecondaryIndexes(b *testing.B, db *sql.DB, tables ...string) (restore func()) {
	type index struct {
		table, name string
		unique      bool
		cols        []string
	}
	var all []*index
	for _, table := range tables {
		rows, err := db.Query("SELECT index_name, non_unique, column_name, sub_part FROM information_schema.statistics "+
			"WHERE table_schema = DATABASE() AND table_name = ? AND index_name <> 'PRIMARY' ORDER BY index_name, seq_in_index", table)
		if err != nil {
			b.Fatal(err)
		}
		var cur *index
		for rows.Next() {
			var name, col string
			var nonUnique int
			var part sql.NullInt64
			if err := rows.Scan(&name, &nonUnique, &col, &part); err != nil {
				b.Fatal(err)
			}
			if cur == nil || cur.name != name {
				cur = &index{table: table, name: name, unique: nonUnique == 0}
				all = append(all, cur)
			}
			if part.Valid {
				col = fmt.Sprintf("%s(%d)", col, part.Int64)
			}
			cur.cols = append(cur.cols, col)
		}
		if err := rows.Close(); err != nil {
			b.Fatal(err)
		}
	}
	for _, ix := range all {
		if _, err := db.Exec("ALTER TABLE " + ix.table + " DROP INDEX " + ix.name); err != nil {
			b.Fatal(err)
		}
	}
	return func() {
		for _, ix := range all {
			kind := "INDEX"
			if ix.unique {
				kind = "UNIQUE INDEX"
			}
			if _, err := db.Exec("ALTER TABLE " + ix.table + " ADD " + kind + " " + ix.name + " (" + strings.Join(ix.cols, ", ") + ")"); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// explainReports returns MySQL's plan of each of the reports' queries over r, written
// as the store writes them.
func explainReports(b *testing.B, db *sql.DB, r reports.Range) string {
	f, t := r.Start.Format("2006-01-02 15:04:05"), r.End.Format("2006-01-02 15:04:05")
	queries := []struct{ name, sql string }{
		{"response: alerts of the range", "SELECT id, policy, source, state, step, round, opened_at, acknowledged_at, resolved_at FROM alerts WHERE opened_at >= '" + f + "' AND opened_at < '" + t + "'"},
		{"response: people of the alerts (their ids' stretch)", "SELECT alert_id, recipient_id FROM messages WHERE alert_id >= 1 AND alert_id <= 100000 AND recipient_id > 0 ORDER BY alert_id, recipient_id"},
		{"interruptions: the tallies of the range", "SELECT local_day, recipient_id, notices, starts FROM notice_days WHERE zone = 'Asia/Shanghai' AND local_day >= '" +
			r.From + "' AND local_day <= '" + r.To + "'"},
		{"interruptions: the notices of a date not yet tallied", "SELECT recipient_id, sent_at FROM messages WHERE status IN ('sent', 'recalled') AND sent_at >= '" +
			f + "' AND sent_at < '" + r.Start.Add(24*time.Hour).Format("2006-01-02 15:04:05") + "' AND recipient_id > 0 ORDER BY recipient_id, sent_at"},
	}
	var out strings.Builder
	for _, q := range queries {
		fmt.Fprintf(&out, "  %s:\n", q.name)
		rows, err := db.Query("EXPLAIN " + q.sql)
		if err != nil {
			b.Fatalf("explain %s: %v", q.name, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(vals))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				b.Fatal(err)
			}
			var cells []string
			for i, v := range vals {
				if v.Valid {
					cells = append(cells, cols[i]+"="+v.String)
				}
			}
			fmt.Fprintf(&out, "    %s\n", strings.Join(cells, " "))
		}
		rows.Close()
	}
	return out.String()
}
