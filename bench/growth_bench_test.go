package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"herald/config"
	"herald/directory"
	"herald/dispatch"
	"herald/internal/app"
	"herald/kernel"
	"herald/models"
	"herald/sending"
	"herald/tasks"
)

// BenchmarkEmbeddedGrowth drains a backlog of 20,000 messages in embedded mode (SQLite
// and the in-process Redis) into databases that already hold 0, 100,000 and 1,000,000
// delivered messages with their attempts, so a growing install shows whether its hot
// queries stay on their indexes. It also prints SQLite's plan of each hot query at the
// largest size. `make bench` runs it once.
func BenchmarkEmbeddedGrowth(b *testing.B) {
	backlog := envInt("HERALD_BENCH_GROWTH_BACKLOG", 20000)
	sizes := []int{0, 100000, 1000000}
	if s := os.Getenv("HERALD_BENCH_GROWTH_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			var n int
			fmt.Sscan(f, &n)
			sizes = append(sizes, n)
		}
	}
	for range b.N {
		var first, last float64
		for i, existing := range sizes {
			rate, plans := embeddedDrain(b, existing, backlog)
			b.ReportMetric(rate, fmt.Sprintf("drain_at_%d_msg/s", existing))
			fmt.Fprintf(os.Stderr, "embedded drain of %d messages with %d already stored: %.0f msg/s\n", backlog, existing, rate)
			if i == 0 {
				first = rate
			}
			last = rate
			if i == len(sizes)-1 {
				fmt.Fprintf(os.Stderr, "SQLite plans with %d stored messages:\n%s", existing, plans)
			}
		}
		if first > 0 {
			b.ReportMetric(last/first, "largest/empty")
		}
	}
}

// embeddedDrain prepares an embedded data directory as a long-running install would
// have left it, with existing delivered messages and a backlog of pending ones whose
// tasks were lost with the previous process's in-process Redis, starts Herald on it and
// measures how fast the backlog is sent (the start's sweep re-enqueues it).
func embeddedDrain(b *testing.B, existing, backlog int) (rate float64, plans string) {
	env := embeddedEnv(b)
	env["HERALD_DEMO"] = "false"
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	store, err := models.Open(kernel.Options{DataDir: cfg.DataDir, SecretKey: cfg.SecretKey})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	acct := &sending.Account{Name: "sandbox", Platform: "sandbox", IsDefault: true, Enabled: true,
		MaxAttempts: 3, Healthy: true, Config: map[string]string{}}
	if err := store.Sending().CreateAccount(ctx, acct); err != nil {
		b.Fatal(err)
	}
	people := make([]directory.Recipient, directory.MaxRecipients)
	ids := make([]string, len(people))
	for i := range people {
		ids[i] = fmt.Sprintf("G%05d", i)
		people[i] = directory.Recipient{ExternalID: ids[i], Name: ids[i], OrgType: directory.Branch, Active: true}
	}
	if _, err := store.Directory().UpsertRecipients(ctx, people); err != nil {
		b.Fatal(err)
	}
	redis, err := tasks.StartEmbeddedRedis(cfg.RedisPassword)
	if err != nil {
		b.Fatal(err)
	}
	red, err := tasks.ParseRedisURL(redis.URL())
	if err != nil {
		b.Fatal(err)
	}
	enq := tasks.NewEnqueuer(red.Asynq())
	log, _ := app.NewLogger(cfg, io.Discard)
	d, err := dispatch.NewDispatcher(dispatch.Config{Store: store, Enqueuer: enq, Log: log, Location: cfg.Location})
	if err != nil {
		b.Fatal(err)
	}
	submit := func(n int, text string) {
		for start := 0; start < n; start += len(ids) {
			if _, err := d.Submit(ctx, dispatch.Request{Source: "api", Actor: "bench", Account: acct.Name,
				Recipients: ids[:min(len(ids), n-start)], Text: text}); err != nil {
				b.Fatal(err)
			}
		}
	}
	db := store.SQL()
	if existing > 0 {
		submit(min(existing, 1000), "history")
		mustExec(b, db, `UPDATE messages SET status = 'sent', attempts = 1, next_attempt_at = NULL, sent_at = created_at`)
		for n := 0; ; {
			if err := db.QueryRow("SELECT COUNT(*) FROM messages").Scan(&n); err != nil {
				b.Fatal(err)
			}
			if n >= existing {
				break
			}
			mustExec(b, db, `INSERT INTO messages (id, batch_id, recipient_id, account_id, platform, address, msg_type, subject,
				content, priority, status, attempts, max_attempts, class_retries, send_at, next_attempt_at, lease_until,
				claim_token, error_class, last_error, provider_message_id, created_at, updated_at, sent_at)
				SELECT lower(hex(randomblob(16))), batch_id, recipient_id, account_id, platform, address, msg_type, subject,
				content, priority, status, attempts, max_attempts, class_retries, send_at, next_attempt_at, lease_until,
				claim_token, error_class, last_error, provider_message_id, created_at, updated_at, sent_at
				FROM messages LIMIT ?`, min(existing-n, 100000))
		}
		mustExec(b, db, `INSERT INTO attempts (message_id, n, started_at, duration_ms, outcome) SELECT id, 1, created_at, 5, 'sent' FROM messages`)
	}
	// The backlog's tasks go to a Redis that is then thrown away, as a restart of an
	// embedded install loses them; the new process's first sweep finds the rows.
	submit(backlog, "backlog")
	enq.Close()
	redis.Close()
	mustExec(b, db, "PRAGMA wal_checkpoint(TRUNCATE)")
	store.Close()

	start := time.Now()
	h := startHerald(b, env, sweepAtOnce)
	defer h.Stop()
	for {
		var left int
		err := h.App.Store.SQL().QueryRow("SELECT COUNT(*) FROM messages WHERE status IN ('pending', 'failed', 'sending')").Scan(&left)
		if err != nil {
			b.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("%d of %d messages not sent after 10 minutes", left, backlog)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rate = float64(backlog) / time.Since(start).Seconds()
	return rate, explainHotQueries(b, h.App.Store.SQL())
}

func mustExec(b *testing.B, db *sql.DB, query string, args ...any) {
	b.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		b.Fatalf("%s: %v", query, err)
	}
}

// hotQueries are the statements a delivered message costs and the ones the console and
// the sweeper repeat, with the conditions models writes for them.
var hotQueries = []struct{ name, sql string }{
	{"claim", `UPDATE messages SET status = 'sending' WHERE id IN ('a', 'b') AND ((status IN ('pending', 'failed') AND next_attempt_at <= '2030-01-01') OR (status = 'sending' AND lease_until < '2030-01-01'))`},
	{"read claimed", `SELECT * FROM messages WHERE id IN ('a', 'b')`},
	{"finish", `UPDATE messages SET status = 'sent' WHERE id = 'a' AND status = 'sending' AND claim_token = 't'`},
	{"attempts of a message", `SELECT * FROM attempts WHERE message_id = 'a' ORDER BY id`},
	{"sweeper: due messages", `SELECT id, priority, next_attempt_at FROM messages WHERE +status IN ('pending', 'failed') AND next_attempt_at <= '2030-01-01' ORDER BY next_attempt_at, id LIMIT 2000`},
	{"sweeper: expired leases", `SELECT id FROM messages WHERE status = 'sending' AND lease_until < '2030-01-01' ORDER BY id LIMIT 500`},
	{"dashboard: in flight", `SELECT COUNT(*) FROM messages WHERE status = 'sending'`},
	{"dashboard: latest failures", `SELECT message_id FROM attempts WHERE outcome = 'failed' ORDER BY id DESC LIMIT 10`},
	{"messages page", `SELECT m.id FROM messages AS m LEFT JOIN recipients r ON r.id = m.recipient_id ORDER BY m.created_at DESC, m.id DESC LIMIT 51`},
	{"messages page by status", `SELECT m.id FROM messages AS m WHERE m.status = 'stopped' ORDER BY m.created_at DESC, m.id DESC LIMIT 51`},
	{"batch counts", `SELECT status, COUNT(*) FROM messages WHERE batch_id = 'x' GROUP BY status`},
}

// explainHotQueries returns SQLite's plan of each hot query, one line each.
func explainHotQueries(b *testing.B, db *sql.DB) string {
	var out strings.Builder
	for _, q := range hotQueries {
		rows, err := db.Query("EXPLAIN QUERY PLAN " + q.sql)
		if err != nil {
			b.Fatalf("explain %s: %v", q.name, err)
		}
		var steps []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				b.Fatal(err)
			}
			steps = append(steps, detail)
		}
		rows.Close()
		fmt.Fprintf(&out, "  %-28s %s\n", q.name+":", strings.Join(steps, "; "))
	}
	return out.String()
}
