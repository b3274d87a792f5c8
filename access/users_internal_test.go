package access

import (
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestPasswordCost: a Herald process hashes passwords above bcrypt's default cost (the
// tests of this package hash at the least cost, UseCheapPasswordHashes).
func TestPasswordCost(t *testing.T) {
	if passwordCost <= bcrypt.DefaultCost {
		t.Errorf("passwords hashed at cost %d, want more than bcrypt's default %d", passwordCost, bcrypt.DefaultCost)
	}
}

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
