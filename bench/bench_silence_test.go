package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"herald/audit"
	"herald/delivery"
	"herald/models"
	"herald/silence"
)

// BenchmarkSilenceRelease holds 10,000 messages under a silence (a worker holds them as
// they come due), then expires it: how long from the silence's end until the last of
// them is sent, beside what the account's limit allows (1,000 a second: at least 10 s),
// and the most calls the platform saw in any one second.
func BenchmarkSilenceRelease(b *testing.B) {
	needMySQLAndRedis(b)
	const messages, perSecond = 10000, 1000
	r := newBenchRig(b, 1000, 0)
	ctx := context.Background()
	store := r.h.App.Store
	r.acct.Limits = delivery.Limits{PerSecond: perSecond}
	if err := store.Sending().SaveAccount(ctx, r.acct); err != nil {
		b.Fatal(err)
	}
	start, end := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	sil, err := r.h.App.Dispatch.Silences().CreateSilence(ctx, audit.System("bench"), silence.SilenceInput{
		Matchers: []delivery.Matcher{{Name: delivery.MatchAccount, Value: r.acct.Name}}, StartsAt: &start, EndsAt: &end,
		Comment: "bench maintenance window"})
	if err != nil {
		b.Fatal(err)
	}
	w := r.startWorker(b, 50)
	b.Cleanup(func() { w.stop(b) })
	held := time.Now()
	r.fanOut(b, messages)
	waitCount(b, store, "held", messages, 3*time.Minute)
	heldIn := time.Since(held)

	b.ResetTimer()
	if _, err := r.h.App.Dispatch.Silences().ExpireSilence(ctx, audit.System("bench"), sil.ID); err != nil {
		b.Fatal(err)
	}
	ended := time.Now()
	waitCount(b, store, "sent", messages, 5*time.Minute)
	var last time.Time
	if err := store.SQL().QueryRow("SELECT MAX(sent_at) FROM messages WHERE status = 'sent'").Scan(&last); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	took := last.Sub(ended)
	var starts []int64
	rows, err := store.SQL().Query("SELECT started_at FROM attempts")
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var at time.Time
		if err := rows.Scan(&at); err != nil {
			b.Fatal(err)
		}
		starts = append(starts, at.UnixMilli())
	}
	rows.Close()
	most, _ := windowOracle(starts, 1000, perSecond)
	if len(starts) != messages {
		b.Errorf("%d attempts for %d messages", len(starts), messages)
	}
	b.ReportMetric(took.Seconds(), "s-to-last-sent")
	b.Logf("silence release: %d held messages (held in %.1f s) released at the silence's end; last sent %.1f s after it, "+
		"limit %d/s (at least %.1f s); at most %d calls in any second; load %s · %s",
		messages, heldIn.Seconds(), took.Seconds(), perSecond, float64(messages)/perSecond, most, loadAverage(), machineLine())
}

// waitCount waits until n messages have the status.
func waitCount(b *testing.B, store *models.Store, status string, n int, timeout time.Duration) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var got int
		if err := store.SQL().QueryRow("SELECT COUNT(*) FROM messages WHERE status = ?", status).Scan(&got); err != nil {
			b.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d messages %s after %s", got, n, status, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// loadAverage is the machine's load over the last 1, 5 and 15 minutes.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	return strings.Join(f[:min(3, len(f))], " ")
}
