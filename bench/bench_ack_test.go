package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/dispatch"
)

// BenchmarkAckLinks opens 1,000 alerts through the service (one person each, a policy
// whose first wait is long, so no step fires during the run), then taps 我来处理 on
// every notice's link, eight people at a time, over HTTP against a running Herald on
// MySQL and Redis. It prints the p50 and p99 of a tap's answer (target: p99 < 100 ms)
// and checks that every alert was acknowledged by its person via the link.
func BenchmarkAckLinks(b *testing.B) {
	needMySQLAndRedis(b)
	const alerts, tappers = 1000, 8
	for range b.N {
		r := startHerald(b, testEnv(b))
		ctx := context.Background()
		d := r.App.Dispatch
		if _, err := d.Alerts().CreatePolicy(ctx, audit.System("bench"), alert.EscalationPolicy{Name: "bench-ack",
			Steps: []alert.PolicyStep{{Targets: []string{"E1001"}, Wait: "1h"}}}); err != nil {
			b.Fatal(err)
		}
		type notice struct {
			alertID int64
			path    string
			person  string
		}
		people := []string{"E2001", "E2002", "E2003"}
		notices := make([]notice, 0, alerts)
		for i := range alerts {
			person := people[i%len(people)]
			res, err := d.Submit(ctx, dispatch.Request{Source: "api", Actor: "bench", Platform: "sandbox", Recipients: []string{person},
				Text: fmt.Sprintf("bench alert %d", i), Ack: &dispatch.AckRequest{Policy: "bench-ack"}})
			if err != nil {
				b.Fatal(err)
			}
			m := res.Messages[0]
			notices = append(notices, notice{res.Alert.ID, alert.AckLinkPath + r.App.AckLinks.Token(m.ID, m.RecipientID), person})
		}

		// The notices go out first: the taps are measured alone, not beside 1,000 sends.
		for deadline := time.Now().Add(2 * time.Minute); r.App.Sim.Stats().Accepted < alerts; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("notices delivered: %d of %d", r.App.Sim.Stats().Accepted, alerts)
			}
		}
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: tappers}}
		took := make([]time.Duration, len(notices))
		work := make(chan int)
		var wg sync.WaitGroup
		var failures sync.Map
		b.ResetTimer()
		start := time.Now()
		for range tappers {
			wg.Go(func() {
				for i := range work {
					t0 := time.Now()
					resp, err := client.PostForm(r.URL+notices[i].path, url.Values{"action": {"ack"}})
					took[i] = time.Since(t0)
					if err != nil {
						failures.Store(i, err.Error())
						continue
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						failures.Store(i, resp.Status)
					}
				}
			})
		}
		for i := range notices {
			work <- i
		}
		close(work)
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		failures.Range(func(k, v any) bool { b.Fatalf("tap %v: %v", k, v); return false })
		for _, n := range notices {
			a, err := alert.Of(r.App.Store).AlertByID(ctx, n.alertID)
			if err != nil || a.State != alert.AlertAcknowledged || a.AcknowledgedBy != n.person || a.AcknowledgedVia != alert.AckViaLink {
				b.Fatalf("alert %d after its tap: %+v, %v", n.alertID, a, err)
			}
		}
		p50, p99 := percentiles(took)
		fmt.Fprintf(os.Stderr, "\n%s\nack links: %d taps by %d people at once in %s (%.0f/s): p50 %s, p99 %s (target p99 < 100ms)\n",
			machineLine(), len(notices), tappers, elapsed.Round(time.Millisecond), float64(len(notices))/elapsed.Seconds(),
			p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond))
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99_ms")
	}
}
