package models_test

import (
	"context"
	"os"
	"testing"
	"time"

	"herald/internal/testenv"
	"herald/kernel"
	"herald/models"
)

// BenchmarkClaimFinish claims and finishes (sent, with its attempt row) chunks of 100
// messages as a worker does, one chunk per iteration, all claims first, then the
// finishes in batches of 50. With MySQL (HERALD_TEST_MYSQL_DSN) on this machine it
// reports the server's CPU time per message for the claims (the UPDATE and the read
// back) and for the finishes, apart from the rest of a drain's work: the database's
// share of a delivered message, one step at a time.
func BenchmarkClaimFinish(b *testing.B) {
	s := testenv.Store(b)
	ctx := context.Background()
	const chunk, finishBatch = 100, 50
	acct, people := benchDirectory(b, s, chunk)
	chunks := make([][]string, b.N)
	for c := range chunks {
		chunks[c] = benchIntake(b, s, acct, people, "逾期：台账 42 请于今日 17:00 前处理")
	}
	n := float64(b.N * chunk)
	b.ResetTimer()
	db0, started := testenv.DatabaseCPU(), time.Now()
	claimed := make([][]*models.Message, 0, b.N)
	for _, ids := range chunks {
		found, token, err := s.ClaimMany(ctx, ids, kernel.Now().Add(time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		var ms []*models.Message
		for _, id := range ids {
			if m := found[id]; m == nil || !m.Claimed(token) {
				b.Fatalf("message %s was not claimed", id)
			}
			ms = append(ms, found[id])
		}
		claimed = append(claimed, ms)
	}
	db1, claimsTook := testenv.DatabaseCPU(), time.Since(started)
	for _, ms := range claimed {
		for k := 0; k < len(ms); k += finishBatch {
			var items []models.Finish
			for _, m := range ms[k:min(k+finishBatch, len(ms))] {
				items = append(items, models.Finish{Message: m, Outcome: models.Outcome{Status: models.StatusSent, CountsAttempt: true,
					Called: true, ProviderMessageID: "pm-" + m.ID[:8], StartedAt: time.Now(), Duration: 5 * time.Millisecond}})
			}
			for _, err := range s.FinishAttempts(ctx, items) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	db2 := testenv.DatabaseCPU()
	b.StopTimer()
	b.ReportMetric(float64(claimsTook.Microseconds())/n, "claim_µs/msg")
	b.ReportMetric(float64((b.Elapsed()-claimsTook).Microseconds())/n, "finish_µs/msg")
	if db0 >= 0 && os.Getenv("HERALD_TEST_MYSQL_DSN") != "" {
		b.ReportMetric(float64((db1-db0).Microseconds())/n, "claim_db_cpu_µs/msg")
		b.ReportMetric(float64((db2-db1).Microseconds())/n, "finish_db_cpu_µs/msg")
	}
}
