// Package bench holds Herald's benchmarks (make bench; results in docs/benchmarks.md).
// They start Herald through test/harness, as the end-to-end tests of test/e2e do.
package bench

import (
	"herald/access"
	"os"
	"testing"
)

// TestMain makes password hashing cheap for the processes the benchmarks start in this
// binary, as test/e2e does: their sign-ins are not what they measure.
func TestMain(m *testing.M) {
	access.UseCheapPasswordHashes()
	os.Exit(m.Run())
}
