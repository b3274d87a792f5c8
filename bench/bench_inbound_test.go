package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/inbound"
)

// BenchmarkInbound posts a storm of events into one integration, nine in ten of them
// duplicates of an alert already open, from 32 callers (HERALD_BENCH_INBOUND_EVENTS,
// default 5,000), while single-recipient sends go to the API at 50 a second: the events
// taken a second, beside raw Asynq at its best in the same run, the sends' p99 and the
// alerts page's p99 (an operator reloading it ten times a second) meanwhile, and that
// each dedup key made exactly one alert.
func BenchmarkInbound(b *testing.B) {
	needMySQLAndRedis(b)
	events := envInt("HERALD_BENCH_INBOUND_EVENTS", 5000)
	const callers = 32
	for range b.N {
		r := newBenchRig(b, 10, 0)
		ctx := context.Background()
		fmt.Fprintf(os.Stderr, "\n%s events=%d callers=%d\n", machineLine(), events, callers)
		noop := rawAsynqNoop(b).rate()
		app := r.h.App
		if err := alert.Of(app.Store).CreatePolicy(ctx, &alert.EscalationPolicy{Name: "bench",
			Steps: []alert.PolicyStep{{Targets: []string{r.people[1]}, Wait: "30m"}}}); err != nil {
			b.Fatal(err)
		}
		_, token, err := app.Dispatch.Inbound().CreateIntegration(ctx, audit.System("bench"), inbound.IntegrationInput{
			Name: "storm", Format: inbound.FormatEvents,
			DefaultRoute: &inbound.Route{Policy: "bench", Account: r.acct.Name, Recipients: []string{r.people[0]}}})
		if err != nil {
			b.Fatal(err)
		}
		distinct := max(events/10, 1)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 30 * time.Second}
		post := func(i int) error {
			body := fmt.Appendf(nil, `{"event_action":"trigger","dedup_key":"node%d::cpu","severity":"critical","title":"CPU high on node%d"}`,
				i%distinct, i%distinct)
			req, err := http.NewRequest("POST", r.h.URL+"/api/v1/inbound/storm", bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		}
		var sends struct {
			took   []time.Duration
			failed int
		}
		jar, _ := cookiejar.New(nil)
		console := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := console.PostForm(r.h.URL+"/login", url.Values{"username": {"admin"}, "password": {testAdminPassword}})
		if err != nil || resp.StatusCode != http.StatusSeeOther {
			b.Fatalf("login: %v %v", resp, err)
		}
		resp.Body.Close()
		var pages []time.Duration
		stop := make(chan struct{})
		sent, viewed := make(chan struct{}), make(chan struct{})
		go func() {
			// An operator watching the alerts page through the storm, ten times a second.
			defer close(viewed)
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				start := time.Now()
				resp, err := console.Get(r.h.URL + "/alerts")
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("alerts page: %d", resp.StatusCode)
					return
				}
				pages = append(pages, time.Since(start))
			}
		}()
		go func() {
			defer close(sent)
			for {
				select {
				case <-stop:
					return
				default:
				}
				took, _, failed := r.postAtRate(b, 50, time.Second, "bench during the storm")
				sends.took, sends.failed = append(sends.took, took...), sends.failed+failed
			}
		}()
		var next atomic.Int64
		var failed atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range callers {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < events; i = int(next.Add(1)) - 1 {
					if err := post(i); err != nil {
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		close(stop)
		<-sent
		<-viewed
		rate := float64(events) / elapsed.Seconds()
		var alerts, maxPerKey int
		if err := app.Store.SQL().QueryRow("SELECT COUNT(*) FROM alerts WHERE source = 'storm'").Scan(&alerts); err != nil {
			b.Fatal(err)
		}
		if err := app.Store.SQL().QueryRow("SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM alerts WHERE source = 'storm' GROUP BY dedup_key) AS k").Scan(&maxPerKey); err != nil {
			b.Fatal(err)
		}
		if alerts != distinct || maxPerKey != 1 || failed.Load() != 0 {
			b.Errorf("%d alerts for %d dedup keys (at most %d a key), %d posts failed", alerts, distinct, maxPerKey, failed.Load())
		}
		_, p99 := percentiles(sends.took)
		_, page99 := percentiles(pages)
		line := "inbound"
		for _, f := range []struct {
			name   string
			value  float64
			digits int
		}{
			{"asynq_noop_tasks_per_s", noop, 0},
			{"inbound_events_per_s", rate, 0},
			{"inbound_ratio", ratio(rate, noop), 2},
			{"send_api_p99_ms_during", ms(p99), 1},
			{"send_api_failed", float64(sends.failed), 0},
			{"console_p99_ms_during", ms(page99), 1},
		} {
			b.ReportMetric(f.value, f.name)
			line += fmt.Sprintf(" %s=%.*f", f.name, f.digits, f.value)
		}
		fmt.Fprintln(os.Stderr, line)
	}
}
