package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"herald/directory"
	"herald/internal/testenv"
)

// BenchmarkConcurrency measures the fan-out drain at several worker concurrencies
// (HERALD_BENCH_CONCURRENCIES, a comma list, 50,100,200,400 by default) on MySQL and
// Redis. At each it measures raw Asynq no-op throughput at that concurrency, then one
// intake of 10,000 recipients through the API with no worker running, drained by one
// worker process of that concurrency, whose peak resident memory it reads from /proc.
// It prints one line per concurrency; `make bench` runs it once.
func BenchmarkConcurrency(b *testing.B) {
	needMySQLAndRedis(b)
	levels, err := envInts("HERALD_BENCH_CONCURRENCIES", []int{50, 100, 200, 400})
	if err != nil {
		b.Fatal(err)
	}
	// One intake: HERALD_BENCH_BACKLOG can make it smaller, not larger.
	n := min(envInt("HERALD_BENCH_BACKLOG", directory.MaxRecipients), directory.MaxRecipients)
	for range b.N {
		rig := newBenchRig(b, n, benchSimLatency)
		// The no-op server gets a Redis database of its own: on Herald's, it would take
		// Herald's tasks too.
		noopRedis := testenv.RedisURL(b)
		fmt.Fprintf(os.Stderr, "\n%s fanout=%d sim_latency=%s\n", machineLine(), n, benchSimLatency)
		for _, c := range levels {
			noop := benchNoop(b, noopRedis, 50000, c)
			rig.fanOut(b, n)
			drained := rig.drain(b, n, c)
			fanout, rssMB := drained.rate, drained.rssMB
			b.ReportMetric(noop, fmt.Sprintf("c%d_noop_tasks_per_s", c))
			b.ReportMetric(fanout, fmt.Sprintf("c%d_fanout_msgs_per_s", c))
			b.ReportMetric(ratio(fanout, noop), fmt.Sprintf("c%d_ratio", c))
			b.ReportMetric(rssMB, fmt.Sprintf("c%d_rss_mb", c))
			fmt.Fprintf(os.Stderr, "concurrency=%d noop_tasks_per_s=%.0f fanout_msgs_per_s=%.0f ratio=%.2f rss_mb=%.0f\n",
				c, noop, fanout, ratio(fanout, noop), rssMB)
		}
	}
}

// envInts reads a comma list of positive integers, or returns def when the variable is
// unset.
func envInts(name string, def []int) ([]int, error) {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return def, nil
	}
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive integer", name, f)
		}
		out = append(out, n)
	}
	return out, nil
}
