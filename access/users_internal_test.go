package access

import (
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestDummyHashMatchesThePasswordCost: the hash an unknown username's login is compared
// against is a real bcrypt hash of passwordCost, so that it takes as long as a wrong
// password does.
func TestDummyHashMatchesThePasswordCost(t *testing.T) {
	cost, err := bcrypt.Cost([]byte(dummyHashAtPasswordCost))
	if err != nil {
		t.Fatalf("dummy hash: %v", err)
	}
	if cost != passwordCost {
		t.Errorf("dummy hash at cost %d, passwords hashed at %d", cost, passwordCost)
	}
	if err := bcrypt.CompareHashAndPassword([]byte(dummyHashAtPasswordCost), []byte("herald-timing-equaliser")); err != nil {
		t.Errorf("dummy hash does not match its password: %v", err)
	}
}
