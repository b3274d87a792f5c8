package access

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// EndUserSession revokes one session of a user by its id: a sign-out from another
// device. A session that is not the user's, or is gone already, is ErrNotFound.
func (s *Credentials) EndUserSession(ctx context.Context, userID int64, id string) error {
	res := s.k.Writer(ctx).Where("id = ? AND user_id = ?", id, userID).Delete(&Session{})
	if res.Error != nil {
		return fmt.Errorf("access: end session of user %d: %w", userID, res.Error)
	}
	if res.RowsAffected == 0 {
		return kernel.ErrNotFound
	}
	return nil
}

// SessionByID returns one live or ended session of a user by its id.
func (s *Credentials) SessionByID(ctx context.Context, userID int64, id string) (*Session, error) {
	var sess Session
	if err := s.k.Reader(ctx).Where("id = ? AND user_id = ?", id, userID).First(&sess).Error; err != nil {
		return nil, kernel.NotFound(err)
	}
	return &sess, nil
}

// Agent is a browser's User-Agent as a person names it: the browser or app (a code:
// chrome, edge, firefox, safari, opera, wechat, wecom, dingtalk, feishu; "" when not
// recognised), its major version and the system (windows, macos, ios, android, linux,
// chromeos; "").
type Agent struct {
	Browser, Version, System string
}

// agentBrowsers are the browsers and apps by the token of theirs a User-Agent carries,
// most specific first: apps and browsers built on Chrome or Safari name those too.
var agentBrowsers = []struct{ token, browser string }{
	{"wxwork/", "wecom"}, {"MicroMessenger/", "wechat"}, {"DingTalk/", "dingtalk"}, {"Lark/", "feishu"}, {"Feishu/", "feishu"},
	{"Edg/", "edge"}, {"EdgiOS/", "edge"}, {"OPR/", "opera"}, {"Firefox/", "firefox"}, {"FxiOS/", "firefox"},
	{"CriOS/", "chrome"}, {"Chrome/", "chrome"}, {"Version/", "safari"},
}

// agentSystems are the systems by their token, most specific first.
var agentSystems = []struct{ token, system string }{
	{"iPhone", "ios"}, {"iPad", "ios"}, {"Android", "android"}, {"CrOS", "chromeos"}, {"Windows", "windows"},
	{"Mac OS X", "macos"}, {"Macintosh", "macos"}, {"Linux", "linux"},
}

// ParseAgent reads a User-Agent header into the browser, its major version and the
// system.
func ParseAgent(ua string) Agent {
	var a Agent
	for _, b := range agentBrowsers {
		if _, rest, ok := strings.Cut(ua, b.token); ok {
			a.Browser = b.browser
			a.Version, _, _ = strings.Cut(rest, ".")
			a.Version, _, _ = strings.Cut(a.Version, " ")
			break
		}
	}
	if a.Browser == "safari" && !strings.Contains(ua, "Safari/") {
		a = Agent{}
	}
	for _, s := range agentSystems {
		if strings.Contains(ua, s.token) {
			a.System = s.system
			break
		}
	}
	return a
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
