package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkIntake measures what accepting costs at a steady rate of single-recipient API
// requests (1,000 a second, HERALD_BENCH_INTAKE_RATE) for 10 s with no worker running:
// the accept latency, and the CPU time spent per request by the local MariaDB (-1 when
// none runs on this machine) and by the benchmark's own process (the web process and its
// callers). The CPU figures are what
// leaves room, on a shared machine, for the worker, Redis and the platforms.
func BenchmarkIntake(b *testing.B) {
	needMySQLAndRedis(b)
	rate := envInt("HERALD_BENCH_INTAKE_RATE", 1000)
	rig := newBenchRig(b, 10000, benchSimLatency)
	// Warm up: connections, caches, the first pages of the tables.
	rig.postAtRate(b, rate, 5*time.Second, "bench intake warm-up")
	for range b.N {
		db0, self0 := databaseCPU(), processCPU()
		took, _, failed := rig.postAtRate(b, rate, 10*time.Second, "bench intake")
		db, self := databaseCPU()-db0, processCPU()-self0
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
		line := fmt.Sprintf("intake rate=%d accepted=%d failed=%d accept_p50_ms=%.1f accept_p99_ms=%.1f mariadb_cpu_us_per_req=%.0f process_cpu_us_per_req=%.0f",
			rate, len(took), failed, ms(p50), ms(p99), perRequest(db), perRequest(self))
		fmt.Fprintln(os.Stderr, line)
		b.ReportMetric(ms(p99), "accept_p99_ms")
		b.ReportMetric(perRequest(db), "mariadb_cpu_us/req")
	}
}

// databaseCPU is the CPU time the local MariaDB (or MySQL) server has used so far, read
// from /proc; -1 when no such process runs on this machine.
func databaseCPU() time.Duration {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid … utime stime: fields 14 and 15, counted after the
		// command name, which may hold spaces.
		s := string(raw)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		if comm := s[open+1 : end]; comm != "mariadbd" && comm != "mysqld" {
			continue
		}
		var utime, stime int64
		f := strings.Fields(s[end+1:])
		if len(f) < 13 {
			continue
		}
		fmt.Sscan(f[11], &utime)
		fmt.Sscan(f[12], &stime)
		return time.Duration(utime+stime) * time.Second / clockTicks
	}
	return -1
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTicks = 100

// processCPU is the CPU time this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
