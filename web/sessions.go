package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/sessions"

	"herald/models"
)

const (
	sessionName = "herald_session"
	tokenKey    = "token"
	// sessionTTL is how long a console login lasts.
	sessionTTL = 12 * time.Hour
)

// Sessions keeps console logins: a signed cookie (gorilla/sessions) carries a random
// token whose hash is a row in console_sessions, so a session can be revoked
// server-side at logout or on a password change.
type Sessions struct {
	cookies *sessions.CookieStore
	store   *models.Store
}

// NewSessions returns the session manager; secret signs the cookie.
func NewSessions(secret []byte, store *models.Store) *Sessions {
	cs := sessions.NewCookieStore(secret)
	cs.Options = &sessions.Options{Path: "/", MaxAge: int(sessionTTL.Seconds()), HttpOnly: true, SameSite: http.SameSiteLaxMode}
	return &Sessions{cookies: cs, store: store}
}

// isHTTPS reports whether the browser talks to Herald over HTTPS, directly or through a
// trusted proxy that says so.
func isHTTPS(r *http.Request) bool {
	return r.TLS != nil || (fromTrustedProxy(r) && r.Header.Get("X-Forwarded-Proto") == "https")
}

func (s *Sessions) cookie(r *http.Request) *sessions.Session {
	// A cookie that fails verification yields a new, empty session: treated as signed out.
	sess, _ := s.cookies.Get(r, sessionName)
	sess.Options.Secure = isHTTPS(r)
	return sess
}

// Start begins a fresh session for u, revoking the one the browser had, if any.
func (s *Sessions) Start(c *gin.Context, u *models.User) error {
	sess := s.cookie(c.Request)
	if old, ok := sess.Values[tokenKey].(string); ok {
		if err := s.store.DeleteSession(c.Request.Context(), old); err != nil {
			return err
		}
	}
	token, err := s.store.CreateSession(c.Request.Context(), u.ID, c.ClientIP(), c.Request.UserAgent(), sessionTTL)
	if err != nil {
		return err
	}
	sess.Values = map[any]any{tokenKey: token}
	return sess.Save(c.Request, c.Writer)
}

// End revokes the browser's session and clears its cookie.
func (s *Sessions) End(c *gin.Context) error {
	sess := s.cookie(c.Request)
	if token, ok := sess.Values[tokenKey].(string); ok {
		if err := s.store.DeleteSession(c.Request.Context(), token); err != nil {
			return err
		}
	}
	sess.Values = map[any]any{}
	sess.Options.MaxAge = -1
	return sess.Save(c.Request, c.Writer)
}

// User returns the signed-in user of a request, or nil.
func (s *Sessions) User(r *http.Request) (*models.User, error) {
	token, ok := s.cookie(r).Values[tokenKey].(string)
	if !ok {
		return nil, nil
	}
	_, u, err := s.store.SessionUser(r.Context(), token)
	if errors.Is(err, models.ErrNotFound) {
		return nil, nil
	}
	return u, err
}
