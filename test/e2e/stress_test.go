package main

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hangAfter is the hang detector of the stress test: a request that has not answered
// after it is a freeze, not a slow answer.
const hangAfter = 5 * time.Second

// TestBurstRightAfterStart is a freshly started Herald under the traffic a small team
// makes from the first second: 32 API callers sending single-recipient messages while a
// signed-in operator polls the live dashboard and pages through messages. It starts
// Herald several times, in embedded mode and (when configured) on MySQL + Redis, because
// the first burst, with nothing warmed up, is where a freeze shows. Every request must
// answer within hangAfter and never with a 5xx, and every accepted message must reach the
// platform. A request that hangs prints a goroutine dump, so a failure explains itself.
func TestBurstRightAfterStart(t *testing.T) {
	span := envDuration("HERALD_STRESS_SPAN", 20*time.Second)
	starts := envInt("HERALD_STRESS_STARTS", 3)
	for _, mode := range burstModes {
		t.Run(mode.name, func(t *testing.T) {
			for i := range starts {
				// The first start runs the whole span; later ones only the dangerous
				// first seconds, each on a new database.
				length := span
				if i > 0 {
					length = min(span, 5*time.Second)
				}
				t.Run(fmt.Sprintf("start%d", i+1), func(t *testing.T) {
					h := startHerald(t, mode.env(t))
					r := runBurst(t, h, 32, 1, length)
					t.Logf("%s: %d accepted in %s (%.0f/s), slowest request %s (%s), %d console pages",
						mode.name, r.accepted, length, float64(r.accepted)/length.Seconds(), r.slowest, r.slowestPath, r.pages)
				})
			}
		})
	}
}

// burstModes are the two ways to run Herald: `make run`'s embedded default and
// production's MySQL + Redis (skipped unless the test backends are configured).
var burstModes = []struct {
	name string
	env  func(testing.TB) map[string]string
}{
	{"embedded", embeddedEnv},
	{"mysql+redis", func(t testing.TB) map[string]string {
		needMySQLAndRedis(t)
		return testEnv(t)
	}},
}

// BenchmarkBurstMix measures TestBurstRightAfterStart's mix on a freshly started Herald
// in both modes in one run, so the embedded rate can be read against MySQL + Redis on
// the same machine the same day. `make bench` runs it once.
func BenchmarkBurstMix(b *testing.B) {
	span := envDuration("HERALD_STRESS_SPAN", 30*time.Second)
	for range b.N {
		rates := map[string]float64{}
		for _, mode := range burstModes {
			h := startHerald(b, mode.env(b))
			r := runBurst(b, h, 32, 1, span)
			h.stop()
			rates[mode.name] = float64(r.accepted) / span.Seconds()
			key := strings.ReplaceAll(mode.name, "+", "_")
			b.ReportMetric(rates[mode.name], key+"_accepted/s")
			b.ReportMetric(float64(r.slowest.Microseconds())/1000, key+"_slowest_ms")
			fmt.Fprintf(os.Stderr, "burst mix %s: %.0f accepted/s over %s, slowest request %s (%s)\n",
				mode.name, rates[mode.name], span, r.slowest.Round(time.Millisecond), r.slowestPath)
		}
		if rates["mysql+redis"] > 0 {
			b.ReportMetric(rates["embedded"]/rates["mysql+redis"], "embedded/mysql")
		}
	}
}

// embeddedEnv is the environment of `make run`: SQLite and the in-process Redis.
func embeddedEnv(t testing.TB) map[string]string {
	return map[string]string{
		"HERALD_DATA_DIR":       t.TempDir(),
		"HERALD_ADMIN_PASSWORD": testAdminPassword,
		"HERALD_TIMEZONE":       "Asia/Shanghai",
	}
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

// burstResult is what one burst measured.
type burstResult struct {
	accepted    int
	pages       int
	slowest     time.Duration
	slowestPath string
	duplicates  int // deliveries of an accepted message beyond its first
}

// watchdog times every request of a burst and prints a goroutine dump, once, when one of
// them has waited longer than hangAfter.
type watchdog struct {
	t        testing.TB
	mu       sync.Mutex
	inFlight map[int64]flight
	next     int64
	slowest  time.Duration
	slowPath string
	dumped   atomic.Bool
}

type flight struct {
	path  string
	start time.Time
}

func (w *watchdog) begin(path string) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	w.inFlight[w.next] = flight{path, time.Now()}
	return w.next
}

func (w *watchdog) end(id int64) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.inFlight[id]
	delete(w.inFlight, id)
	took := time.Since(f.start)
	if took > w.slowest {
		w.slowest, w.slowPath = took, f.path
	}
	return took
}

func (w *watchdog) watch(stop <-chan struct{}) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		w.mu.Lock()
		var hung []string
		for _, f := range w.inFlight {
			if age := time.Since(f.start); age > hangAfter {
				hung = append(hung, fmt.Sprintf("%s (%s)", f.path, age.Round(time.Millisecond)))
			}
		}
		w.mu.Unlock()
		if len(hung) > 0 && w.dumped.CompareAndSwap(false, true) {
			w.t.Errorf("requests waiting over %s: %s; goroutine dump follows on stderr", hangAfter, strings.Join(hung, ", "))
			fmt.Fprintf(os.Stderr, "\n=== goroutines while %d requests wait over %s ===\n", len(hung), hangAfter)
			_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		}
	}
}

var nextPageLink = regexp.MustCompile(`href="(/messages\?[^"]+)" rel="next"`)

// runBurst runs callers API callers and operators console users against h for span,
// then waits until the platform has every accepted message.
func runBurst(t testing.TB, h *running, callers, operators int, span time.Duration) burstResult {
	api := newAPIKey(t, h, "send,read")
	// The clients give up long after the hang detector has spoken, so that a freeze
	// ends the test instead of hanging it.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: callers}}
	consoles := make([]*browser, operators)
	for i := range consoles {
		consoles[i] = newBrowser(t, h.url)
		consoles[i].login("admin", testAdminPassword)
		consoles[i].c.Timeout = 30 * time.Second
	}
	w := &watchdog{t: t, inFlight: map[int64]flight{}}
	stop := make(chan struct{})
	go w.watch(stop)
	defer close(stop)

	var (
		mu       sync.Mutex
		accepted []string
		failures []string
		pages    int
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	people := []string{"E2001", "E2002", "E2003"}
	deadline := time.Now().Add(span)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for n := 0; time.Now().Before(deadline); n++ {
				body := fmt.Sprintf(`{"account":"sandbox","recipients":[%q],"content":{"text":"burst %d-%d"}}`, people[(c+n)%len(people)], c, n)
				req, _ := http.NewRequest("POST", h.url+"/api/v1/messages", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+api.key)
				req.Header.Set("Content-Type", "application/json")
				id := w.begin("POST /api/v1/messages")
				resp, err := client.Do(req)
				w.end(id)
				if err != nil {
					fail("POST /api/v1/messages: %v", err)
					continue
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					fail("POST /api/v1/messages: %d %s", resp.StatusCode, raw)
					continue
				}
				var out struct {
					Messages []struct{ ID string } `json:"messages"`
				}
				if err := json.Unmarshal(raw, &out); err != nil || len(out.Messages) != 1 {
					fail("POST /api/v1/messages: answer %s", raw)
					continue
				}
				mu.Lock()
				accepted = append(accepted, out.Messages[0].ID)
				mu.Unlock()
			}
		})
	}
	for _, console := range consoles {
		wg.Go(func() { operate(console, w, deadline, fail, func() { mu.Lock(); pages++; mu.Unlock() }) })
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if len(accepted) == 0 {
		t.Fatal("no message was accepted")
	}
	dups := waitDelivered(t, h, accepted, 2*time.Minute)
	return burstResult{accepted: len(accepted), pages: pages, slowest: w.slowest, slowestPath: w.slowPath, duplicates: dups}
}

// operate is one signed-in operator of a burst until deadline: the dashboard's live
// fragment every 2 s, and between polls the messages list, page after page. Each page
// answered counts with served; failures go to fail.
func operate(console *browser, w *watchdog, deadline time.Time, fail func(string, ...any), served func()) {
	get := func(path string, header map[string]string) string {
		id := w.begin("GET " + path)
		req, _ := http.NewRequest("GET", console.base+path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := console.c.Do(req)
		w.end(id)
		if err != nil {
			fail("GET %s: %v", path, err)
			return ""
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			fail("GET %s: %d", path, resp.StatusCode)
			return ""
		}
		served()
		return string(raw)
	}
	page := "/messages"
	nextPoll := time.Now()
	for time.Now().Before(deadline) {
		if !time.Now().Before(nextPoll) {
			get("/dashboard/live", map[string]string{"HX-Request": "true"})
			nextPoll = nextPoll.Add(2 * time.Second)
		}
		body := get(page, nil)
		if m := nextPageLink.FindStringSubmatch(body); m != nil {
			page = html.UnescapeString(m[1])
		} else {
			page = "/messages"
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitDelivered waits until the platform has received every message in ids and returns
// how many deliveries of them came beyond the first.
func waitDelivered(t testing.TB, h *running, ids []string, timeout time.Duration) (duplicates int) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := map[string]int{}
		for _, d := range h.app.Sim.Deliveries() {
			got[d.RequestID]++
		}
		var missing []string
		for _, id := range ids {
			if got[id] == 0 {
				missing = append(missing, id)
			}
			duplicates += max(got[id]-1, 0)
		}
		if len(missing) == 0 {
			return duplicates
		}
		duplicates = 0
		if time.Now().After(deadline) {
			slices.Sort(missing)
			t.Fatalf("%d of %d accepted messages never reached the platform, e.g. %v", len(missing), len(ids), missing[:min(5, len(missing))])
		}
		time.Sleep(200 * time.Millisecond)
	}
}
