package bench

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"herald/internal/testenv"
)

// BenchmarkIntake measures what accepting costs at a steady rate of single-recipient API
// requests (1,000 a second, HERALD_BENCH_INTAKE_RATE) for 10 s with no worker running:
// the accept latency, and the CPU time spent per request by the local MariaDB (-1 when
// none runs on this machine) and by the benchmark's own process (the web process and its
// callers), and that less the same requests' cost against a handler that does nothing
// (httpFloor): what Herald's web process adds to a request. The CPU figures are what
// leaves room, on a shared machine, for the worker, Redis and the platforms. Then a worker drains what was accepted while requests keep
// coming at the same rate: the accept latency while lone messages drain.
func BenchmarkIntake(b *testing.B) {
	needMySQLAndRedis(b)
	rate := envInt("HERALD_BENCH_INTAKE_RATE", 1000)
	rig := newBenchRig(b, 10000, benchSimLatency)
	// Warm up: connections, caches, the first pages of the tables.
	rig.postAtRate(b, rate, 5*time.Second, "bench intake warm-up")
	for range b.N {
		db0, self0 := testenv.DatabaseCPU(), processCPU()
		took, _, failed := rig.postAtRate(b, rate, 10*time.Second, "bench intake")
		db, self := testenv.DatabaseCPU()-db0, processCPU()-self0
		if db0 < 0 {
			db = -1 // no local server to read
		}
		p50, p99 := percentiles(took)
		perRequest := func(d time.Duration) float64 {
			if len(took) == 0 || d < 0 {
				return -1
			}
			return float64(d.Microseconds()) / float64(len(took))
		}
		floor := rig.httpFloor(b, rate)
		line := fmt.Sprintf("intake rate=%d accepted=%d failed=%d accept_p50_ms=%.1f accept_p99_ms=%.1f mariadb_cpu_us_per_req=%.0f process_cpu_us_per_req=%.0f http_floor_cpu_us_per_req=%.0f herald_cpu_us_per_req=%.0f",
			rate, len(took), failed, ms(p50), ms(p99), perRequest(db), perRequest(self), floor, perRequest(self)-floor)
		fmt.Fprintln(os.Stderr, line)
		b.ReportMetric(ms(p99), "accept_p99_ms")
		b.ReportMetric(perRequest(db), "mariadb_cpu_us/req")
		rig.acceptWhileDraining(b, rate)
	}
}

// httpFloor is the process CPU per request of the same requests, at the same rate, from
// the same callers, to a handler that reads the body and answers what the API answers
// without doing anything, on Go's HTTP server in this process: what the callers and the
// HTTP exchange cost before Herald's work. BenchmarkIntake's process figure less this is
// what Herald's web process adds to a request.
func (r *benchRig) httpFloor(b *testing.B, rate int) float64 {
	answer := []byte(`{"batch_id":"01KB0000000000000000000000","status":"open","accepted":1,"messages":[{"id":"01KB0000000000000000000001","recipient":"B000001","status":"queued"}],"skipped":{},"rejected":{}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(answer)
	}))
	defer srv.Close()
	r.postAtRateTo(b, srv.URL, rate, 2*time.Second, "bench http floor warm-up")
	self0 := processCPU()
	took, _, _ := r.postAtRateTo(b, srv.URL, rate, 5*time.Second, "bench http floor")
	self := processCPU() - self0
	if len(took) == 0 || self0 < 0 {
		return -1
	}
	return float64(self.Microseconds()) / float64(len(took))
}

// acceptWhileDraining starts a worker on the lone messages accepted so far (a few per
// task, as they were grouped) and offers the same rate of requests while it drains them;
// it prints how long the backlog took and the accept latency meanwhile.
func (r *benchRig) acceptWhileDraining(b *testing.B, rate int) {
	var backlog int
	if err := r.h.App.Store.SQL().QueryRow("SELECT COUNT(*) FROM messages WHERE status <> 'sent'").Scan(&backlog); err != nil {
		b.Fatal(err)
	}
	worker := r.startWorker(b, r.h.App.Config.WorkerConcurrency)
	defer worker.stop(b)
	took, _, failed := r.postAtRate(b, rate, 10*time.Second, "bench intake while draining")
	// How long the backlog took (-1: it was not drained within the offer), and what of it
	// was left then.
	var left int
	var last sql.NullTime
	if err := r.h.App.Store.SQL().QueryRow(`SELECT SUM(status <> 'sent'), MAX(sent_at) FROM messages
		WHERE content <> 'bench intake while draining'`).Scan(&left, &last); err != nil {
		b.Fatal(err)
	}
	drained := -1.0
	if left == 0 && last.Valid {
		drained = last.Time.Sub(worker.started.UTC()).Seconds()
	}
	p50, p99 := percentiles(took)
	fmt.Fprintf(os.Stderr, "intake_while_draining backlog=%d drained_s=%.1f backlog_left=%d accepted=%d failed=%d accept_p50_ms=%.1f accept_p99_ms=%.1f\n",
		backlog, drained, left, len(took), failed, ms(p50), ms(p99))
}

// machineCPU is the CPU time all of the machine's cores have been busy so far, and the
// time they have been there at all (busy or idle), from the first line of /proc/stat;
// zeros where it cannot be read.
func machineCPU() (busy, total time.Duration) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		var ticks int64
		fmt.Sscan(v, &ticks)
		d := time.Duration(ticks) * time.Second / testenv.ClockTicks
		total += d
		if i != 3 && i != 4 { // idle, iowait
			busy += d
		}
	}
	return busy, total
}

// processCPU is the CPU time this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
