package harness

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"runtime/trace"
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

// BurstModes are the two ways to run Herald: `make run`'s embedded default and
// production's MySQL + Redis (skipped unless the test backends are configured).
var BurstModes = []struct {
	Name string
	Env  func(testing.TB) map[string]string
}{
	{"embedded", EmbeddedEnv},
	{"mysql+redis", func(t testing.TB) map[string]string {
		NeedMySQLAndRedis(t)
		return TestEnv(t)
	}},
}

// EmbeddedEnv is the environment of `make run`: SQLite and the in-process Redis.
func EmbeddedEnv(t testing.TB) map[string]string {
	return map[string]string{
		"HERALD_DATA_DIR":       t.TempDir(),
		"HERALD_ADMIN_PASSWORD": AdminPassword,
		"HERALD_TIMEZONE":       "Asia/Shanghai",
		// See TestEnv.
		"HERALD_SIMULATOR_ADDR":      "off",
		"HERALD_SIMULATOR_SMTP_ADDR": "off",
	}
}

// EnvDuration is the positive duration in the environment variable name, else def.
func EnvDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

// BurstResult is what one burst measured.
type BurstResult struct {
	Accepted    int
	Pages       int
	Slowest     time.Duration
	SlowestPath string
	// SlowestAt is when the slowest request was sent, counted from the burst's start.
	SlowestAt  time.Duration
	Duplicates int // deliveries of an accepted message beyond its first
}

// watchdog times every request of a burst and prints a goroutine dump, once, when one of
// them has waited longer than hangAfter.
type watchdog struct {
	t        testing.TB
	mu       sync.Mutex
	inFlight map[int64]flight
	next     int64
	started  time.Time
	slowest  time.Duration
	slowPath string
	slowAt   time.Duration
	dumped   atomic.Bool

	// recorder, when HERALD_BURST_TRACE names a folder, keeps the last seconds of an
	// execution trace; the first request of the burst slower than traceSlowerThan
	// writes them out (see slowTrace).
	recorder *trace.FlightRecorder
	traced   atomic.Bool
	writing  sync.WaitGroup
}

// traceSlowerThan is how slow a request must be for its burst's trace to be kept.
const traceSlowerThan = 200 * time.Millisecond

// traces numbers the traces written in this process.
var traces atomic.Int64

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
		w.slowest, w.slowPath, w.slowAt = took, f.path, f.start.Sub(w.started)
	}
	if w.recorder != nil && took > traceSlowerThan && w.traced.CompareAndSwap(false, true) {
		w.writing.Go(func() { w.slowTrace(f.path, took) })
	}
	return took
}

// slowTrace writes the execution trace of the seconds around a slow request to the
// folder HERALD_BURST_TRACE names, for go tool trace: what the process did while the
// request waited (its goroutines' blocking, system calls, the collector, the
// scheduler).
func (w *watchdog) slowTrace(path string, took time.Duration) {
	time.Sleep(100 * time.Millisecond) // the moments after the answer, too
	name := filepath.Join(os.Getenv("HERALD_BURST_TRACE"), fmt.Sprintf("burst-%03d-%s-%dms.trace", traces.Add(1),
		strings.NewReplacer(" ", "-", "/", "_").Replace(path), took.Milliseconds()))
	f, err := os.Create(name)
	if err != nil {
		w.t.Logf("trace of a slow request: %v", err)
		return
	}
	defer f.Close()
	if _, err := w.recorder.WriteTo(f); err != nil {
		w.t.Logf("trace of a slow request: %v", err)
	}
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

// RunBurst runs callers API callers and operators console users against h for span,
// then waits until the platform has every accepted message.
func RunBurst(t testing.TB, h *Running, callers, operators int, span time.Duration) BurstResult {
	api := NewAPIKey(t, h, "send,read")
	// The clients give up long after the hang detector has spoken, so that a freeze
	// ends the test instead of hanging it.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: callers}}
	// Its connections close with the burst: left idle, each would hold three goroutines
	// (two here, one in Herald) until the server's idle timeout.
	defer client.CloseIdleConnections()
	consoles := make([]*Browser, operators)
	for i := range consoles {
		consoles[i] = NewBrowser(t, h.URL)
		consoles[i].Login("admin", AdminPassword)
		consoles[i].Client.Timeout = 30 * time.Second
	}
	w := &watchdog{t: t, inFlight: map[int64]flight{}, started: time.Now()}
	if os.Getenv("HERALD_BURST_TRACE") != "" {
		w.recorder = trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 2 * time.Second, MaxBytes: 64 << 20})
		if err := w.recorder.Start(); err != nil {
			t.Fatalf("HERALD_BURST_TRACE: %v", err)
		}
		defer func() {
			w.writing.Wait()
			w.recorder.Stop()
		}()
	}
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
				req, _ := http.NewRequest("POST", h.URL+"/api/v1/messages", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+api.Key)
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
	dups := WaitDelivered(t, h, accepted, 2*time.Minute)
	return BurstResult{Accepted: len(accepted), Pages: pages, Slowest: w.slowest, SlowestPath: w.slowPath, SlowestAt: w.slowAt, Duplicates: dups}
}

// operate is one signed-in operator of a burst until deadline: the dashboard's live
// fragment every 2 s, and between polls the messages list, page after page. Each page
// answered counts with served; failures go to fail.
func operate(console *Browser, w *watchdog, deadline time.Time, fail func(string, ...any), served func()) {
	get := func(path string, header map[string]string) string {
		id := w.begin("GET " + path)
		req, _ := http.NewRequest("GET", console.Base+path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := console.Client.Do(req)
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

// WaitDelivered waits until the platform has received every message in ids and returns
// how many deliveries of them came beyond the first.
func WaitDelivered(t testing.TB, h *Running, ids []string, timeout time.Duration) (duplicates int) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := map[string]int{}
		for _, d := range h.App.Sim.Deliveries() {
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
