package access_test

import (
	"os"
	"testing"

	"herald/access"
)

// TestMain makes password hashing cheap in this package's tests, which create users
// and sign in hundreds of times: under the race detector one hash at the real cost takes
// about a second. What the real cost is, and that the hashes are made at the cost in
// force, is checked on its own (TestPasswordCost, TestCreateUser).
func TestMain(m *testing.M) {
	access.UseCheapPasswordHashes()
	os.Exit(m.Run())
}
