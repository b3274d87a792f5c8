package bench

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkKilledWorker repeats the kill of TestKilledWorkerLosesNothing
// (HERALD_BENCH_KILLS times, 5 by default) and reports how long after the SIGKILL the
// last message became final, and the duplicates.
func BenchmarkKilledWorker(b *testing.B) {
	runs := 5
	if v, err := strconv.Atoi(os.Getenv("HERALD_BENCH_KILLS")); err == nil && v > 0 {
		runs = v
	}
	var times []time.Duration
	dups, unknown := 0, 0
	for i := range runs {
		b.Run(fmt.Sprintf("kill-%d", i+1), func(b *testing.B) {
			k := killWorkerMidRun(b, 2000, time.Minute, "")
			times = append(times, k.Recovered)
			dups += k.Duplicates
			unknown += k.Unknown
		})
	}
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	fmt.Printf("killed worker, %d runs: every message final after the kill in min %s, median %s, max %s; duplicate deliveries %d in all, messages with an unknown attempt %d in all\n",
		len(times), times[0].Round(100*time.Millisecond), times[len(times)/2].Round(100*time.Millisecond),
		times[len(times)-1].Round(100*time.Millisecond), dups, unknown)
}
