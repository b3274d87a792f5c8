package inbound_test

import (
	"os"
	"testing"

	"herald/access"
)

// TestMain makes password hashing cheap in this package's tests: under the race detector
// one hash at the real cost takes about a second (access's tests check the real cost).
func TestMain(m *testing.M) {
	access.UseCheapPasswordHashes()
	os.Exit(m.Run())
}
