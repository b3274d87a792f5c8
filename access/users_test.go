package access_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"

	"herald/access"
	"herald/internal/testenv"
	"herald/kernel"
)

// Password hashing is deliberately slow (and much slower under -race), so the tests
// that hash run in parallel and each hashes as few times as it can.

func TestRoleAllows(t *testing.T) {
	t.Parallel()
	roles := []access.Role{access.RoleViewer, access.RoleOperator, access.RoleAdmin}
	// want[have][need]
	want := map[access.Role]map[access.Role]bool{
		access.RoleViewer:   {access.RoleViewer: true, access.RoleOperator: false, access.RoleAdmin: false},
		access.RoleOperator: {access.RoleViewer: true, access.RoleOperator: true, access.RoleAdmin: false},
		access.RoleAdmin:    {access.RoleViewer: true, access.RoleOperator: true, access.RoleAdmin: true},
		"":                  {access.RoleViewer: false, access.RoleOperator: false, access.RoleAdmin: false},
		"root":              {access.RoleViewer: false, access.RoleOperator: false, access.RoleAdmin: false},
	}
	got := map[access.Role]map[access.Role]bool{}
	for have := range want {
		got[have] = map[access.Role]bool{}
		for _, need := range roles {
			got[have][need] = have.Allows(need)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Role.Allows (have → need) mismatch (-want +got):\n%s", diff)
	}
}

func TestCreateUserValidation(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	tests := []struct {
		name               string
		username, password string
		role               access.Role
		wantField          string
	}{
		{"one-character username", "a", "long-enough-pw", access.RoleViewer, "username"},
		{"username with a space", "bad name", "long-enough-pw", access.RoleViewer, "username"},
		{"username starting with a dash", "-alice", "long-enough-pw", access.RoleViewer, "username"},
		{"username of 65 characters", strings.Repeat("a", 65), "long-enough-pw", access.RoleViewer, "username"},
		{"short password", "alice", "short", access.RoleViewer, "password"},
		{"password one below the minimum", "alice", strings.Repeat("p", access.MinPasswordLen-1), access.RoleViewer, "password"},
		{"password over 72 bytes", "alice", strings.Repeat("p", 73), access.RoleViewer, "password"},
		{"common password", "alice", "password123", access.RoleViewer, "password"},
		{"password with the username", "alice", "alice-horse-battery", access.RoleViewer, "password"},
		{"unknown role", "alice", "long-enough-pw", "root", "role"},
		{"empty role", "alice", "long-enough-pw", "", "role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := s.Access().CreateUser(ctx, tt.username, tt.password, tt.role)
			var fe *kernel.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("CreateUser(%q, %q, %q) = %+v, %v; want a *kernel.FieldError", tt.username, tt.password, tt.role, u, err)
			}
			if fe.Field != tt.wantField {
				t.Errorf("FieldError names %q (%v), want %q", fe.Field, fe, tt.wantField)
			}
		})
	}
	if n, err := s.Access().CountUsers(ctx); err != nil || n != 0 {
		t.Errorf("CountUsers after rejected creations = %d, %v; want 0", n, err)
	}
}

func TestCreateUser(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	const password = "correct-horse-battery"
	u, err := s.Access().CreateUser(ctx, "alice", password, access.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}

	var hash string
	if err := s.SQL().QueryRow("SELECT password_hash FROM console_users WHERE id = ?", u.ID).Scan(&hash); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(hash, password) {
		t.Errorf("stored password_hash %q contains the password", hash)
	}
	if cost, err := bcrypt.Cost([]byte(hash)); err != nil {
		t.Errorf("stored password_hash %q is not a bcrypt hash: %v", hash, err)
	} else if cost != access.HashCost() {
		t.Errorf("bcrypt cost %d, want the cost in force, %d", cost, access.HashCost())
	}

	got, err := s.Access().UserByID(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alice", "operator"}, []string{got.Username, string(got.Role)}); diff != "" {
		t.Errorf("stored [username role] (-want +got):\n%s", diff)
	}

	_, err = s.Access().CreateUser(ctx, "alice", "another-password", access.RoleViewer)
	var fe *kernel.FieldError
	if !errors.As(err, &fe) || fe.Field != "username" {
		t.Errorf("CreateUser of an existing username: %v, want a FieldError on username", err)
	}
	if n, err := s.Access().CountUsers(ctx); err != nil || n != 1 {
		t.Errorf("CountUsers = %d, %v; want 1", n, err)
	}
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	const password = "correct-horse-battery"
	alice, err := s.Access().CreateUser(ctx, "alice", password, access.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	if alice.LastLoginAt != nil {
		t.Errorf("new user has LastLoginAt %v, want nil", alice.LastLoginAt)
	}

	before := kernel.Now()
	u, err := s.Access().Authenticate(ctx, "alice", password, "10.0.0.1")
	after := kernel.Now()
	if err != nil {
		t.Fatalf("Authenticate with the right password: %v", err)
	}
	if u.ID != alice.ID {
		t.Errorf("Authenticate returned user %d, want %d", u.ID, alice.ID)
	}
	if u.LastLoginAt == nil || u.LastLoginAt.Before(before) || u.LastLoginAt.After(after) {
		t.Errorf("LastLoginAt = %v, want between %v and %v", u.LastLoginAt, before, after)
	}
	stored, err := s.Access().UserByID(ctx, alice.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(u.LastLoginAt, stored.LastLoginAt); diff != "" {
		t.Errorf("stored last_login_at differs from the returned one (-want +got):\n%s", diff)
	}

	tests := []struct {
		name, username, password string
	}{
		{"wrong password", "alice", "wrong-horse-battery"},
		{"unknown user", "mallory", password},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := s.Access().Authenticate(ctx, tt.username, tt.password, "10.0.0.1")
			if !errors.Is(err, access.ErrBadCredentials) {
				t.Errorf("Authenticate(%q, %q) = %+v, %v; want ErrBadCredentials", tt.username, tt.password, u, err)
			}
		})
	}

	t.Run("disabled user", func(t *testing.T) {
		if _, err := s.SQL().Exec("UPDATE console_users SET disabled = TRUE WHERE id = ?", alice.ID); err != nil {
			t.Fatal(err)
		}
		u, err := s.Access().Authenticate(ctx, "alice", password, "10.0.0.1")
		if !errors.Is(err, access.ErrBadCredentials) {
			t.Errorf("Authenticate of a disabled user with the right password = %+v, %v; want ErrBadCredentials", u, err)
		}
	})
}

func TestChangePassword(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	const oldPassword, newPassword = "correct-horse-battery", "staple-battery-horse"
	u, err := s.Access().CreateUser(ctx, "alice", oldPassword, access.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	var tokens []string
	for range 2 {
		tok, err := s.Access().CreateSession(ctx, u.ID, "10.0.0.1", "test", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tok)
	}

	err = s.Access().ChangePassword(ctx, u.ID, "not-the-password", newPassword, "10.0.0.1")
	var fe *kernel.FieldError
	if !errors.As(err, &fe) || fe.Field != "current_password" {
		t.Errorf("ChangePassword with a wrong current password: %v, want a FieldError on current_password", err)
	}
	// The failed change must have left the sessions alone.
	if _, _, err := s.Access().SessionUser(ctx, tokens[0], idle); err != nil {
		t.Fatalf("session after a failed password change: %v", err)
	}

	if err := s.Access().ChangePassword(ctx, u.ID, oldPassword, newPassword, "10.0.0.1"); err != nil {
		t.Fatalf("ChangePassword: %v", err)
	}
	for i, tok := range tokens {
		if _, _, err := s.Access().SessionUser(ctx, tok, idle); !errors.Is(err, kernel.ErrNotFound) {
			t.Errorf("session %d after the password change: %v, want ErrNotFound", i, err)
		}
	}
	if n := testenv.Count(t, s, "SELECT COUNT(*) FROM console_sessions WHERE user_id = ?", u.ID); n != 0 {
		t.Errorf("%d session rows left for the user, want 0", n)
	}
	if _, err := s.Access().Authenticate(ctx, "alice", newPassword, "10.0.0.1"); err != nil {
		t.Errorf("Authenticate with the new password: %v", err)
	}
}

// A username that only looks like one (another case of a letter outside ASCII, an
// accent, full-width letters) never signs in as that user, even with their password,
// and on MySQL too, where the column's old collation matched them; guesses under any
// spelling of a user's name count against that user.
func TestLookalikeUsernames(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	const password = "correct-horse-battery"
	admin, err := s.Access().CreateUser(ctx, "admin", password, access.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"ädmin", "àdmin", "ãdmin", "ＡＤＭＩＮ", "ａｄｍｉｎ", "admin\u0000", "admın"} {
		if u, err := s.Access().Authenticate(ctx, name, password, fmt.Sprintf("10.0.8.%d", i)); !errors.Is(err, access.ErrBadCredentials) {
			t.Errorf("sign-in as %q with admin's password: %+v, %v; want ErrBadCredentials", name, u, err)
		}
	}
	var n int64
	if err := s.SQL().QueryRow("SELECT COUNT(*) FROM console_users WHERE username = ?", "ädmin").Scan(&n); err != nil || n != 0 {
		t.Errorf("the database matches ädmin to %d users (%v): usernames must compare byte for byte", n, err)
	}
	if u, err := s.Access().Authenticate(ctx, " Admin ", password, "10.0.8.20"); err != nil || u.ID != admin.ID {
		t.Errorf("sign-in as \" Admin \": %+v, %v; want admin (ASCII case is folded)", u, err)
	}
	// Five wrong guesses as ADMIN and Admin: the next as admin is past admin's limit.
	for i, name := range []string{"ADMIN", "Admin", "aDmin", "ADMIN", "Admin"} {
		if _, err := s.Access().Authenticate(ctx, name, "wrong-horse-battery", fmt.Sprintf("10.0.8.%d", 30+i)); !errors.Is(err, access.ErrBadCredentials) {
			t.Fatalf("wrong guess %d as %s: %v", i+1, name, err)
		}
	}
	// The sixth passes the gate; the seventh, at once, is refused.
	for i := range 2 {
		if err := s.Access().BeginGuess(ctx, "admin", "10.0.8.40", kernel.Now(), true); (i == 0) != (err == nil) {
			t.Errorf("wrong guess %d on admin under another spelling: %v", 6+i, err)
		}
	}
}
