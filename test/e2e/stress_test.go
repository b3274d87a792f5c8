package main

import (
	"fmt"
	"testing"
	"time"
)

// TestBurstRightAfterStart is a freshly started Herald under the traffic a small team
// makes from the first second: 32 API callers sending single-recipient messages while a
// signed-in operator polls the live dashboard and pages through messages. It starts
// Herald several times, in embedded mode and (when configured) on MySQL + Redis, because
// the first burst, with nothing warmed up, is where a freeze shows. Every request must
// answer within hangAfter and never with a 5xx, and every accepted message must reach the
// platform. A request that hangs prints a goroutine dump, so a failure explains itself.
// In make test it starts Herald twice per mode and the first burst lasts 5 s; with the
// long runs (make test-long) three times with a first burst of 10 s (HERALD_STRESS_SPAN,
// HERALD_STRESS_STARTS), and the soak keeps the same traffic up for half an hour. It
// judges freezes, not speed, so it runs beside the package's other parallel tests: their
// load makes a freeze likelier, not less.
func TestBurstRightAfterStart(t *testing.T) {
	t.Parallel()
	span := envDuration("HERALD_STRESS_SPAN", time.Duration(fullSize(5, 10))*time.Second)
	starts := envInt("HERALD_STRESS_STARTS", fullSize(2, 3))
	for _, mode := range burstModes {
		t.Run(mode.Name, func(t *testing.T) {
			for i := range starts {
				// The first start runs the whole span; later ones only the dangerous
				// first seconds, each on a new database.
				length := span
				if i > 0 {
					length = min(span, time.Duration(fullSize(3, 5))*time.Second)
				}
				t.Run(fmt.Sprintf("start%d", i+1), func(t *testing.T) {
					h := startHerald(t, mode.Env(t))
					r := runBurst(t, h, 32, 1, length)
					t.Logf("%s: %d accepted in %s (%.0f/s), slowest request %s (%s), %d console pages",
						mode.Name, r.Accepted, length, float64(r.Accepted)/length.Seconds(), r.Slowest, r.SlowestPath, r.Pages)
				})
			}
		})
	}
}
