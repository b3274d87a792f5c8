package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Soak limits: what a long run of the burst mix must keep to.
const (
	soakSlowest   = 250 * time.Millisecond // the slowest request of the whole run
	soakRSSGrowth = 0.10                   // resident memory at the end over after warm-up
)

// TestSoak runs the burst mix (64 API callers sending, two operators on the dashboard
// and the messages list, the worker draining) for HERALD_SOAK_DURATION, 30 minutes by
// default (make test-long), on the embedded default and on MySQL + Redis when set. It
// runs in rounds of at most a minute; after each, every message accepted in it must have
// reached the platform exactly once (the simulator's record is then cleared, so that the
// test's own bookkeeping does not grow in the process it measures). At the end the
// slowest request must have answered within 250 ms and the resident memory must be
// within 10 % of what it was after the first tenth of the run.
//
// The memory judged is read after each round once the collector has run and handed its
// free pages back (debug.FreeOSMemory): what the process still holds, Herald's state
// and SQLite's and the in-process Redis's memory. Read at an arbitrary moment, the
// resident size also holds the garbage of the last collection cycle, a saw-tooth of
// about a fifth of the total that hides growth as easily as it invents it. Both
// readings are logged each round.
func TestSoak(t *testing.T) {
	span := envDuration("HERALD_SOAK_DURATION", 30*time.Minute)
	round := min(max(span/30, 10*time.Second), time.Minute)
	rounds := max(int(span/round), 1)
	warm := max(rounds/10, 1)
	for _, mode := range burstModes {
		t.Run(mode.Name, func(t *testing.T) {
			h := startHerald(t, mode.Env(t))
			var (
				accepted, dups int
				slowest        time.Duration
				slowestPath    string
				warmRSS, rss   int64
			)
			for i := range rounds {
				r := runBurst(t, h, 64, 2, round)
				h.App.Sim.Reset()
				accepted += r.Accepted
				dups += r.Duplicates
				if r.Slowest > slowest {
					slowest, slowestPath = r.Slowest, r.SlowestPath
				}
				// Where the memory is, for when it grows: the resident size as the
				// round ends, the Go heap in use and the free heap the runtime still
				// holds, the goroutines' stacks and their number; then the resident
				// size after a collection, the figure judged, with the parts it is made
				// of: the process's own memory and its mapped files, the Go runtime's
				// share and SQLite's page caches.
				raw := residentBytes(t)
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				debug.FreeOSMemory()
				pageCache := sqlitePageCaches()
				rss = residentBytes(t)
				if i < warm {
					warmRSS = max(warmRSS, rss)
				}
				if i == warm-1 || i == rounds-1 {
					writeHeapProfile(t, mode.Name, i+1)
				}
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				t.Logf("round %d/%d: %d accepted, slowest %s (%s, %s into the round), RSS %d MiB after collection (SQLite's page caches %d MiB; own %d MiB, of which the Go runtime holds %d MiB; mapped files %d MiB; Go heap in use %d MiB), %d MiB before (Go heap in use %d MiB, free but held %d MiB), stacks %d MiB, %d goroutines",
					i+1, rounds, r.Accepted, r.Slowest.Round(time.Millisecond), r.SlowestPath, r.SlowestAt.Round(time.Millisecond),
					rss>>20, pageCache>>20, procStatus(t, "RssAnon")>>20, (after.Sys-after.HeapReleased)>>20, procStatus(t, "RssFile")>>20, after.HeapInuse>>20, raw>>20, ms.HeapInuse>>20, (ms.HeapIdle-ms.HeapReleased)>>20, ms.StackInuse>>20, runtime.NumGoroutine())
				if t.Failed() {
					return
				}
			}
			growth := float64(rss-warmRSS) / float64(warmRSS)
			t.Logf("%s soak over %s: %d accepted, %d duplicate deliveries, slowest request %s (%s), RSS %d MiB after warm-up, %d MiB at the end (%+.1f%%)",
				mode.Name, span, accepted, dups, slowest.Round(time.Millisecond), slowestPath, warmRSS>>20, rss>>20, 100*growth)
			if dups != 0 {
				t.Errorf("%d duplicate deliveries, want 0", dups)
			}
			if slowest >= soakSlowest {
				t.Errorf("slowest request %s (%s), want under %s", slowest.Round(time.Millisecond), slowestPath, soakSlowest)
			}
			if growth > soakRSSGrowth {
				t.Errorf("resident memory grew %.1f%% after warm-up (%d to %d MiB), want at most %.0f%%",
					100*growth, warmRSS>>20, rss>>20, 100*soakRSSGrowth)
			}
		})
	}
}

// writeHeapProfile writes the heap's profile after round n to the folder
// HERALD_SOAK_PROFILES names, when it names one: the profiles after the warm-up and at
// the end, compared (go tool pprof -base), show what the Go heap kept on growing.
func writeHeapProfile(t *testing.T, mode string, n int) {
	dir := os.Getenv("HERALD_SOAK_PROFILES")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap-%s-round%02d.pb.gz", mode, n)))
	if err != nil {
		t.Fatalf("heap profile: %v", err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatalf("heap profile: %v", err)
	}
}

// residentBytes is the test process's resident memory (VmRSS): the Herald under test
// runs in it.
func residentBytes(t testing.TB) int64 { return procStatus(t, "VmRSS") }

// procStatus reads one of /proc/self/status's sizes, in bytes: VmRSS, or its parts
// RssAnon (the process's own memory: Go's heap and stacks, SQLite's caches) and
// RssFile (pages of files it maps: its own code, SQLite's shared WAL index).
func procStatus(t testing.TB, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc to read the resident memory from: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s %q: %v", field, rest, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
