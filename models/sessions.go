package models

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
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

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewToken returns a random URL-safe token of 32 bytes.
func NewToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// CreateSession starts a session for a user and returns the token for the cookie.
func (s *Store) CreateSession(ctx context.Context, userID int64, ip, userAgent string, ttl time.Duration) (string, error) {
	token := NewToken()
	now := Now()
	userAgent = truncate(userAgent, 255)
	sess := &Session{ID: hashToken(token), UserID: userID, IP: ip, UserAgent: userAgent,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(ttl)}
	if err := s.db.WithContext(ctx).Create(sess).Error; err != nil {
		return "", fmt.Errorf("models: create session: %w", err)
	}
	return token, nil
}

// sessionTouchEvery limits last-seen writes to one a minute per session.
const sessionTouchEvery = time.Minute

// SessionUser returns the live session for a token and its user. An expired session, a
// disabled user or an unknown token gives ErrNotFound.
func (s *Store) SessionUser(ctx context.Context, token string) (*Session, *User, error) {
	if token == "" {
		return nil, nil, ErrNotFound
	}
	var sess Session
	now := Now()
	err := s.reader(ctx).Where("id = ? AND expires_at > ?", hashToken(token), now).First(&sess).Error
	if err != nil {
		return nil, nil, notFound(err)
	}
	u, err := s.UserByID(ctx, sess.UserID)
	if errors.Is(err, ErrNotFound) || (err == nil && u.Disabled) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	if now.Sub(sess.LastSeenAt) > sessionTouchEvery {
		s.db.WithContext(ctx).Model(&Session{}).Where("id = ?", sess.ID).Update("last_seen_at", now)
	}
	return &sess, u, nil
}

// DeleteSession revokes one session by its token.
func (s *Store) DeleteSession(ctx context.Context, token string) error {
	err := s.db.WithContext(ctx).Where("id = ?", hashToken(token)).Delete(&Session{}).Error
	if err != nil {
		return fmt.Errorf("models: delete session: %w", err)
	}
	return nil
}

// DeleteExpiredSessions removes sessions past their expiry.
func (s *Store) DeleteExpiredSessions(ctx context.Context) error {
	return s.db.WithContext(ctx).Where("expires_at <= ?", Now()).Delete(&Session{}).Error
}

// LoginFailure is one failed login, kept to throttle guessing per user and per address.
type LoginFailure struct {
	ID       int64
	Username string
	IP       string
	At       time.Time
}

// RecordLoginFailure stores a failed login.
func (s *Store) RecordLoginFailure(ctx context.Context, username, ip string) error {
	err := s.db.WithContext(ctx).Create(&LoginFailure{Username: truncate(username, 64), IP: ip, At: Now()}).Error
	if err != nil {
		return fmt.Errorf("models: record login failure: %w", err)
	}
	return nil
}

// LoginFailuresSince counts failures since a time for a username and for an address.
func (s *Store) LoginFailuresSince(ctx context.Context, username, ip string, since time.Time) (byUser, byIP int64, err error) {
	db := s.reader(ctx).Model(&LoginFailure{})
	since = since.UTC() // SQLite compares times as text: every stored time is UTC
	if err = db.Where("username = ? AND at > ?", truncate(username, 64), since).Count(&byUser).Error; err != nil {
		return 0, 0, fmt.Errorf("models: count login failures: %w", err)
	}
	db = s.reader(ctx).Model(&LoginFailure{})
	if err = db.Where("ip = ? AND at > ?", ip, since).Count(&byIP).Error; err != nil {
		return 0, 0, fmt.Errorf("models: count login failures: %w", err)
	}
	return byUser, byIP, nil
}

// DeleteLoginFailuresBefore prunes old failure records.
func (s *Store) DeleteLoginFailuresBefore(ctx context.Context, before time.Time) error {
	return s.db.WithContext(ctx).Where("at < ?", before).Delete(&LoginFailure{}).Error
}
