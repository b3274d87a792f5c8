package access_test

import (
	"errors"
	"strings"
	"testing"

	"herald/access"
	"herald/kernel"
)

func TestCheckPassword(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, password string
		// want is a part of the message; "" means the password is accepted.
		want string
	}{
		{"short", "Zq8-short", "must be at least 10 characters"},
		{"too long for bcrypt", strings.Repeat("horse-", 13), "must be at most 72 bytes"},
		{"the username inside", "xx-alice-horse-battery", "must not contain the username"},
		{"the username in capitals", "My-ALICE-horse-battery", "must not contain the username"},
		{"top-100 common password", "1234567890", "This is a top-100 common password"},
		{"common password", "password123", "This is a very common password"},
		{"common password with digits", "Password1234", "This is similar to a commonly used password"},
		{"reversed common password", "drowssap1234", "Reversed words aren't much harder to guess"},
		{"predictable substitutions", "p@ssw0rd123", "Predictable substitutions"},
		{"name and year", "Jennifer1990", "Common names and surnames are easy to guess"},
		{"repeated character", "aaaaaaaaaaaa", `Repeats like "aaa" are easy to guess`},
		{"sequence", "abcdefghijkl", "Sequences like abc or 6543 are easy to guess"},
		{"a few uncommon words", "correct-horse-battery", ""},
		{"another few words", "staple-battery-horse", ""},
		{"random", "vT9#qL2m!xR4", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := access.CheckPassword("alice", tt.password)
			if tt.want == "" {
				if err != nil {
					t.Errorf("CheckPassword(%q) = %v, want it accepted", tt.password, err)
				}
				return
			}
			var fe *kernel.FieldError
			if !errors.As(err, &fe) || fe.Field != "password" || !strings.Contains(fe.Message, tt.want) {
				t.Errorf("CheckPassword(%q) = %v, want a FieldError on password saying %q", tt.password, err, tt.want)
			}
		})
	}
}
