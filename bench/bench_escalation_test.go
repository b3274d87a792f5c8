package bench

import (
	"context"
	"fmt"
	"herald/alert"
	"net/http"
	"sync"
	"testing"
	"time"
)

// BenchmarkEscalation opens 1,000 alerts at once under a two-step policy with 30 s waits
// and lets nobody acknowledge, with two worker processes firing the steps: how late each
// step fired against its due time (p50, p99; target p99 < 1 s), and that no step fired
// twice (every person called got exactly one notice of each step).
func BenchmarkEscalation(b *testing.B) {
	needMySQLAndRedis(b)
	const alerts = 1000
	r := newBenchRig(b, 3, 0)
	ctx := context.Background()
	store := r.h.App.Store
	p := &alert.EscalationPolicy{Name: "bench", Steps: []alert.PolicyStep{
		{Targets: []string{r.people[1]}, Wait: "30s"}, {Targets: []string{r.people[2]}, Wait: "30s"}}}
	if err := alert.Of(store).CreatePolicy(ctx, p); err != nil {
		b.Fatal(err)
	}
	for range 2 {
		w := r.startWorker(b, 50)
		b.Cleanup(func() { w.stop(b) })
	}
	b.ResetTimer()
	client := &http.Client{Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	next := make(chan int)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := r.openAlert(client, r.people[0], fmt.Sprintf("alert %d", i)); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := range alerts {
		next <- i
	}
	close(next)
	wg.Wait()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		counts, err := alert.Of(store).AlertCounts(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if counts[alert.AlertExhausted] == alerts {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("alerts by state after 3 minutes: %v", counts)
		}
		time.Sleep(time.Second)
	}
	b.StopTimer()
	late, err := stepLateness(store)
	if err != nil {
		b.Fatal(err)
	}
	p50, p99 := percentiles(late)
	notices, err := noticesPerPerson(store)
	if err != nil {
		b.Fatal(err)
	}
	// Step 1 calls people[1] once per alert; step 2 people[2], who then also hears that
	// nobody answered.
	want := map[string]int{r.people[0]: alerts, r.people[1]: alerts, r.people[2]: 2 * alerts}
	for who, n := range want {
		if notices[who] != n {
			b.Errorf("%s got %d notices, want %d: a step fired twice or never", who, notices[who], n)
		}
	}
	b.ReportMetric(ms(p99), "p99-late-ms")
	b.Logf("escalation: %d alerts, %d steps fired by 2 workers: lateness vs due p50 %.1f ms, p99 %.1f ms (target < 1000 ms); notices %v (none doubled) · %s",
		alerts, len(late), ms(p50), ms(p99), notices, machineLine())
}

// openAlert sends to one person with acknowledgment under the bench policy.
func (r *benchRig) openAlert(client *http.Client, person, text string) error {
	return r.post(client, map[string]any{"account": r.acct.Name, "recipients": []string{person},
		"content": map[string]string{"text": text}, "ack": map[string]string{"policy": "bench"}})
}
