package bench

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// BenchmarkBurstMix measures TestBurstRightAfterStart's mix on a freshly started Herald
// in both modes in one run, so the embedded rate can be read against MySQL + Redis on
// the same machine the same day. `make bench` runs it once.
func BenchmarkBurstMix(b *testing.B) {
	span := envDuration("HERALD_STRESS_SPAN", 30*time.Second)
	for range b.N {
		rates := map[string]float64{}
		for _, mode := range burstModes {
			h := startHerald(b, mode.Env(b))
			r := runBurst(b, h, 32, 1, span)
			h.Stop()
			rates[mode.Name] = float64(r.Accepted) / span.Seconds()
			key := strings.ReplaceAll(mode.Name, "+", "_")
			b.ReportMetric(rates[mode.Name], key+"_accepted/s")
			b.ReportMetric(float64(r.Slowest.Microseconds())/1000, key+"_slowest_ms")
			fmt.Fprintf(os.Stderr, "burst mix %s: %.0f accepted/s over %s, slowest request %s (%s)\n",
				mode.Name, rates[mode.Name], span, r.Slowest.Round(time.Millisecond), r.SlowestPath)
		}
		if rates["mysql+redis"] > 0 {
			b.ReportMetric(rates["embedded"]/rates["mysql+redis"], "embedded/mysql")
		}
	}
}
