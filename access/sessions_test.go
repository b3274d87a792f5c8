package access_test

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

	"herald/access"
	"herald/internal/testenv"
	"herald/kernel"
)

// idle is the idle timeout the session tests judge by: HERALD_SESSION_IDLE's default.
const idle = 30 * time.Minute

func TestSessions(t *testing.T) {
	t.Parallel()
	s := testenv.Store(t)
	ctx := context.Background()
	alice, err := s.Access().CreateUser(ctx, "alice", "correct-horse-battery", access.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	newSession := func(t *testing.T, ttl time.Duration) string {
		t.Helper()
		tok, err := s.Access().CreateSession(ctx, alice.ID, "10.0.0.7", "Mozilla/5.0", ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	live := newSession(t, time.Hour)

	t.Run("live session", func(t *testing.T) {
		sess, u, err := s.Access().SessionUser(ctx, live, idle)
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
		stored := testenv.QueryStrings(t, s.SQL(), "SELECT id FROM console_sessions WHERE user_id = ?", alice.ID)
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
				tok, err := s.Access().CreateSession(ctx, alice.ID, "10.0.0.7", tt.userAgent, time.Hour)
				if err != nil {
					t.Fatalf("CreateSession with a %d-byte user agent: %v", len(tt.userAgent), err)
				}
				sess, _, err := s.Access().SessionUser(ctx, tok, idle)
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
		if err := s.Access().DeleteSession(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Access().SessionUser(ctx, tok, idle); !errors.Is(err, kernel.ErrNotFound) {
			t.Errorf("SessionUser after DeleteSession: %v, want ErrNotFound", err)
		}
		if _, _, err := s.Access().SessionUser(ctx, live, idle); err != nil {
			t.Errorf("DeleteSession of one session broke another of the same user: %v", err)
		}
	})

	t.Run("expired sessions", func(t *testing.T) {
		past := newSession(t, -time.Second)
		brief := newSession(t, 20*time.Millisecond)
		time.Sleep(50 * time.Millisecond)
		for name, tok := range map[string]string{"negative ttl": past, "ttl elapsed": brief} {
			if _, _, err := s.Access().SessionUser(ctx, tok, idle); !errors.Is(err, kernel.ErrNotFound) {
				t.Errorf("%s: SessionUser = %v, want ErrNotFound", name, err)
			}
		}
		before := testenv.Count(t, s, "SELECT COUNT(*) FROM console_sessions")
		if err := s.Access().DeleteExpiredSessions(ctx); err != nil {
			t.Fatal(err)
		}
		if got := testenv.Count(t, s, "SELECT COUNT(*) FROM console_sessions"); got != before-2 {
			t.Errorf("DeleteExpiredSessions left %d of %d sessions, want %d", got, before, before-2)
		}
		if _, _, err := s.Access().SessionUser(ctx, live, idle); err != nil {
			t.Errorf("DeleteExpiredSessions removed a live session: %v", err)
		}
	})

	t.Run("idle sessions end; last seen is written at most once a minute", func(t *testing.T) {
		bob, err := s.Access().CreateUser(ctx, "bob", "correct-horse-battery", access.RoleViewer)
		if err != nil {
			t.Fatal(err)
		}
		active, err := s.Access().CreateSession(ctx, bob.ID, "10.0.0.8", "Firefox", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		unused, err := s.Access().CreateSession(ctx, bob.ID, "10.0.0.9", "Safari", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		setLastSeen := func(tok string, ago time.Duration) {
			t.Helper()
			sum := sha256.Sum256([]byte(tok))
			if _, err := s.SQL().Exec("UPDATE console_sessions SET last_seen_at = ? WHERE id = ?",
				kernel.Now().Add(-ago), hex.EncodeToString(sum[:])); err != nil {
				t.Fatal(err)
			}
		}
		setLastSeen(active, 29*time.Minute)
		setLastSeen(unused, 31*time.Minute)

		if _, _, err := s.Access().SessionUser(ctx, unused, idle); !errors.Is(err, kernel.ErrNotFound) {
			t.Errorf("session unused for 31 minutes with a 30-minute idle timeout: %v, want ErrNotFound", err)
		}
		sess, _, err := s.Access().SessionUser(ctx, active, idle)
		if err != nil {
			t.Fatalf("session used 29 minutes ago: %v", err)
		}
		if time.Since(sess.LastSeenAt) > time.Minute {
			t.Errorf("last seen %v after a use, want now", sess.LastSeenAt)
		}
		// Within the minute, a use writes nothing: set last seen back by seconds and
		// see it stay there.
		setLastSeen(active, 20*time.Second)
		if _, _, err := s.Access().SessionUser(ctx, active, idle); err != nil {
			t.Fatal(err)
		}
		list, err := s.Access().UserSessions(ctx, bob.ID, idle)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].UserAgent != "Firefox" {
			t.Fatalf("UserSessions = %+v, want only the active Firefox session", list)
		}
		if age := kernel.Now().Sub(list[0].LastSeenAt); age < 15*time.Second {
			t.Errorf("last seen rewritten %v after the previous write, want at most one write a minute", 20*time.Second-age)
		}
		if _, _, err := s.Access().SessionUser(ctx, unused, time.Hour); err != nil {
			t.Errorf("the unused session with a one-hour idle timeout: %v", err)
		}

		if err := s.Access().DeleteUserSessions(ctx, bob.ID); err != nil {
			t.Fatal(err)
		}
		if n := testenv.Count(t, s, "SELECT COUNT(*) FROM console_sessions WHERE user_id = ?", bob.ID); n != 0 {
			t.Errorf("%d sessions of bob left after DeleteUserSessions, want 0", n)
		}
		if _, _, err := s.Access().SessionUser(ctx, live, idle); err != nil {
			t.Errorf("DeleteUserSessions of bob ended alice's session: %v", err)
		}
	})

	t.Run("unknown tokens", func(t *testing.T) {
		for _, tok := range []string{"", kernel.NewToken(), live + "x"} {
			if _, _, err := s.Access().SessionUser(ctx, tok, idle); !errors.Is(err, kernel.ErrNotFound) {
				t.Errorf("SessionUser(%q) = %v, want ErrNotFound", tok, err)
			}
		}
	})

	// Last: it disables the user every other subtest relies on.
	t.Run("disabled user", func(t *testing.T) {
		if _, err := s.SQL().Exec("UPDATE console_users SET disabled = TRUE WHERE id = ?", alice.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Access().SessionUser(ctx, live, idle); !errors.Is(err, kernel.ErrNotFound) {
			t.Errorf("SessionUser for a disabled user: %v, want ErrNotFound", err)
		}
	})
}
