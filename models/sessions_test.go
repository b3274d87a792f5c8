package models_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"herald/internal/testenv"
	"herald/models"
)

func TestSessions(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	alice, err := s.CreateUser(ctx, "alice", "correct-horse-battery", models.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	newSession := func(t *testing.T, ttl time.Duration) string {
		t.Helper()
		tok, err := s.CreateSession(ctx, alice.ID, "10.0.0.7", "Mozilla/5.0", ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	live := newSession(t, time.Hour)

	t.Run("live session", func(t *testing.T) {
		sess, u, err := s.SessionUser(ctx, live)
		if err != nil {
			t.Fatal(err)
		}
		type view struct {
			UserID            int64
			Username, IP, UA  string
			SessionUserID     int64
			ExpiresWithinHour bool
		}
		want := view{UserID: alice.ID, Username: "alice", IP: "10.0.0.7", UA: "Mozilla/5.0", SessionUserID: alice.ID, ExpiresWithinHour: true}
		untilExpiry := time.Until(sess.ExpiresAt)
		got := view{UserID: u.ID, Username: u.Username, IP: sess.IP, UA: sess.UserAgent, SessionUserID: sess.UserID,
			ExpiresWithinHour: untilExpiry > 59*time.Minute && untilExpiry <= time.Hour}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("SessionUser mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("stored id is the token's hash", func(t *testing.T) {
		stored := queryStrings(t, s.SQL(), "SELECT id FROM console_sessions WHERE user_id = ?", alice.ID)
		sum := sha256.Sum256([]byte(live))
		want := []string{hex.EncodeToString(sum[:])}
		if diff := cmp.Diff(want, stored); diff != "" {
			t.Errorf("console_sessions ids (-want +got):\n%s", diff)
		}
		for _, id := range stored {
			if strings.Contains(id, live) {
				t.Errorf("console_sessions.id %q holds the cookie token", id)
			}
		}
	})

	t.Run("long user agents are cut to 255 bytes of valid UTF-8", func(t *testing.T) {
		tests := []struct{ name, userAgent string }{
			{"ascii", strings.Repeat("u", 400)},
			// Byte 255 falls inside a two-byte rune.
			{"multibyte", "ab" + strings.Repeat("é", 200)},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tok, err := s.CreateSession(ctx, alice.ID, "10.0.0.7", tt.userAgent, time.Hour)
				if err != nil {
					t.Fatalf("CreateSession with a %d-byte user agent: %v", len(tt.userAgent), err)
				}
				sess, _, err := s.SessionUser(ctx, tok)
				if err != nil {
					t.Fatal(err)
				}
				ua := sess.UserAgent
				if len(ua) > 255 || len(ua) < 250 || !utf8.ValidString(ua) || !strings.HasPrefix(tt.userAgent, ua) {
					t.Errorf("stored user agent is %d bytes (valid UTF-8: %v, prefix of the original: %v), want a valid UTF-8 prefix of 250–255 bytes",
						len(ua), utf8.ValidString(ua), strings.HasPrefix(tt.userAgent, ua))
				}
			})
		}
	})

	t.Run("deleted session", func(t *testing.T) {
		tok := newSession(t, time.Hour)
		if err := s.DeleteSession(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.SessionUser(ctx, tok); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("SessionUser after DeleteSession: %v, want ErrNotFound", err)
		}
		if _, _, err := s.SessionUser(ctx, live); err != nil {
			t.Errorf("DeleteSession of one session broke another of the same user: %v", err)
		}
	})

	t.Run("expired sessions", func(t *testing.T) {
		past := newSession(t, -time.Second)
		brief := newSession(t, 20*time.Millisecond)
		time.Sleep(50 * time.Millisecond)
		for name, tok := range map[string]string{"negative ttl": past, "ttl elapsed": brief} {
			if _, _, err := s.SessionUser(ctx, tok); !errors.Is(err, models.ErrNotFound) {
				t.Errorf("%s: SessionUser = %v, want ErrNotFound", name, err)
			}
		}
		before := count(t, s, "SELECT COUNT(*) FROM console_sessions")
		if err := s.DeleteExpiredSessions(ctx); err != nil {
			t.Fatal(err)
		}
		if got := count(t, s, "SELECT COUNT(*) FROM console_sessions"); got != before-2 {
			t.Errorf("DeleteExpiredSessions left %d of %d sessions, want %d", got, before, before-2)
		}
		if _, _, err := s.SessionUser(ctx, live); err != nil {
			t.Errorf("DeleteExpiredSessions removed a live session: %v", err)
		}
	})

	t.Run("unknown tokens", func(t *testing.T) {
		for _, tok := range []string{"", models.NewToken(), live + "x"} {
			if _, _, err := s.SessionUser(ctx, tok); !errors.Is(err, models.ErrNotFound) {
				t.Errorf("SessionUser(%q) = %v, want ErrNotFound", tok, err)
			}
		}
	})

	// Last: it disables the user every other subtest relies on.
	t.Run("disabled user", func(t *testing.T) {
		if _, err := s.SQL().Exec("UPDATE console_users SET disabled = TRUE WHERE id = ?", alice.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.SessionUser(ctx, live); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("SessionUser for a disabled user: %v, want ErrNotFound", err)
		}
	})
}

func TestLoginFailuresSince(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	now := models.Now()
	// Failures from two hours ago, outside the window.
	for _, f := range [][2]string{{"alice", "10.0.0.1"}, {"alice", "10.0.0.9"}, {"bob", "10.0.0.1"}} {
		_, err := s.SQL().Exec("INSERT INTO login_failures (username, ip, at) VALUES (?, ?, ?)", f[0], f[1], now.Add(-2*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range [][2]string{{"alice", "10.0.0.1"}, {"alice", "10.0.0.1"}, {"alice", "10.0.0.2"}, {"bob", "10.0.0.1"}, {"carol", "10.0.0.3"}} {
		if err := s.RecordLoginFailure(ctx, f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}

	since := now.Add(-time.Hour)
	tests := []struct {
		username, ip string
		byUser, byIP int64
	}{
		{"alice", "10.0.0.1", 3, 3},
		{"alice", "10.0.0.2", 3, 1},
		{"bob", "10.0.0.9", 1, 0},
		{"nobody", "10.0.0.3", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.username+"@"+tt.ip, func(t *testing.T) {
			byUser, byIP, err := s.LoginFailuresSince(ctx, tt.username, tt.ip, since)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{tt.byUser, tt.byIP}, []int64{byUser, byIP}); diff != "" {
				t.Errorf("[byUser byIP] mismatch (-want +got):\n%s", diff)
			}
		})
	}

	// The old failures count once the window reaches back far enough.
	byUser, byIP, err := s.LoginFailuresSince(ctx, "alice", "10.0.0.9", now.Add(-3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{5, 1}, []int64{byUser, byIP}); diff != "" {
		t.Errorf("three-hour window [byUser byIP] mismatch (-want +got):\n%s", diff)
	}
}

func TestRecordLoginFailureCutsLongUsernames(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	tests := []struct{ name, username string }{
		{"ascii", strings.Repeat("u", 100)},
		// Byte 64 falls inside a two-byte rune.
		{"multibyte", "a" + strings.Repeat("é", 40)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ip := "10.1.0." + tt.name
			if err := s.RecordLoginFailure(ctx, tt.username, ip); err != nil {
				t.Fatalf("RecordLoginFailure with a %d-byte username: %v", len(tt.username), err)
			}
			stored := queryStrings(t, s.SQL(), "SELECT username FROM login_failures WHERE ip = ?", ip)
			if len(stored) != 1 {
				t.Fatalf("%d failures stored for %s, want 1", len(stored), ip)
			}
			u := stored[0]
			if len(u) > 64 || len(u) < 60 || !utf8.ValidString(u) || !strings.HasPrefix(tt.username, u) {
				t.Errorf("stored username is %d bytes (valid UTF-8: %v, prefix of the original: %v), want a valid UTF-8 prefix of 60–64 bytes",
					len(u), utf8.ValidString(u), strings.HasPrefix(tt.username, u))
			}
		})
	}
}
