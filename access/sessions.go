package access

import (
	"context"
	"errors"
	"fmt"
	"time"

	"herald/kernel"
)

// Session is a console login, kept server-side so that logout and a password change
// revoke it even if the cookie survives. Only the token's hash is stored.
type Session struct {
	ID         string // hex SHA-256 of the token in the cookie
	UserID     int64
	IP         string
	UserAgent  string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

// TableName implements gorm's tabler.
func (Session) TableName() string { return "console_sessions" }

// CreateSession starts a session for a user and returns the token for the cookie.
func (s *Credentials) CreateSession(ctx context.Context, userID int64, ip, userAgent string, ttl time.Duration) (string, error) {
	token := kernel.NewToken()
	now := kernel.Now()
	userAgent = kernel.Truncate(userAgent, 255)
	sess := &Session{ID: kernel.HashToken(token), UserID: userID, IP: ip, UserAgent: userAgent,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(ttl)}
	if err := s.k.Writer(ctx).Create(sess).Error; err != nil {
		return "", fmt.Errorf("access: create session: %w", err)
	}
	return token, nil
}

// sessionTouchEvery limits last-seen writes to one a minute per session.
const sessionTouchEvery = time.Minute

// SessionUser returns the live session for a token and its user. A session past its
// expiry or unused for longer than idle (as last seen, which is recorded to the
// minute), a disabled user or an unknown token gives ErrNotFound.
func (s *Credentials) SessionUser(ctx context.Context, token string, idle time.Duration) (*Session, *User, error) {
	if token == "" {
		return nil, nil, kernel.ErrNotFound
	}
	var sess Session
	now := kernel.Now()
	err := s.k.Reader(ctx).Where("id = ? AND expires_at > ? AND last_seen_at > ?", kernel.HashToken(token), now, now.Add(-idle)).
		First(&sess).Error
	if err != nil {
		return nil, nil, kernel.NotFound(err)
	}
	u, err := s.UserByID(ctx, sess.UserID)
	if errors.Is(err, kernel.ErrNotFound) || (err == nil && u.Disabled) {
		return nil, nil, kernel.ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	if now.Sub(sess.LastSeenAt) > sessionTouchEvery {
		s.k.Writer(ctx).Model(&Session{}).Where("id = ?", sess.ID).Update("last_seen_at", now)
		sess.LastSeenAt = now
	}
	return &sess, u, nil
}

// UserSessions lists a user's live sessions (as SessionUser judges them), most
// recently seen first.
func (s *Credentials) UserSessions(ctx context.Context, userID int64, idle time.Duration) ([]Session, error) {
	var out []Session
	now := kernel.Now()
	err := s.k.Reader(ctx).Where("user_id = ? AND expires_at > ? AND last_seen_at > ?", userID, now, now.Add(-idle)).
		Order("last_seen_at DESC").Order("created_at DESC").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("access: sessions of user %d: %w", userID, err)
	}
	return out, nil
}

// DeleteUserSessions revokes every session of a user: "sign out everywhere".
func (s *Credentials) DeleteUserSessions(ctx context.Context, userID int64) error {
	if err := s.k.Writer(ctx).Where("user_id = ?", userID).Delete(&Session{}).Error; err != nil {
		return fmt.Errorf("access: revoke sessions of user %d: %w", userID, err)
	}
	return nil
}

// DeleteSession revokes one session by its token.
func (s *Credentials) DeleteSession(ctx context.Context, token string) error {
	err := s.k.Writer(ctx).Where("id = ?", kernel.HashToken(token)).Delete(&Session{}).Error
	if err != nil {
		return fmt.Errorf("access: delete session: %w", err)
	}
	return nil
}

// DeleteExpiredSessions removes sessions past their expiry.
func (s *Credentials) DeleteExpiredSessions(ctx context.Context) error {
	return s.k.Writer(ctx).Where("expires_at <= ?", kernel.Now()).Delete(&Session{}).Error
}
