package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/sessions"

	"herald/access"
	"herald/handlers"
	"herald/kernel"
	"herald/models"
)

const (
	sessionName = "herald_session"
	tokenKey    = "token"
	// noticeKey and noticeSubjectKey hold the one-time notice of the last action.
	noticeKey, noticeSubjectKey = "notice", "notice_subject"
	// sessionTTL is how long a console login lasts at most, however active.
	sessionTTL = 12 * time.Hour
	// noticeSubjectLen bounds what a notice carries in the cookie, in characters.
	noticeSubjectLen = 300
)

// Sessions keeps console logins: a signed cookie (gorilla/sessions) carries a random
// token whose hash is a row in console_sessions, so a session can be revoked
// server-side at logout or on a password change. A session ends after sessionTTL, or
// earlier once unused for the idle timeout.
type Sessions struct {
	cookies *sessions.CookieStore
	store   *models.Store
	idle    time.Duration
}

// NewSessions returns the session manager; secret signs the cookie, idle is how long
// an unused session lives (HERALD_SESSION_IDLE).
func NewSessions(secret []byte, store *models.Store, idle time.Duration) *Sessions {
	cs := sessions.NewCookieStore(secret)
	cs.Options = &sessions.Options{Path: "/", MaxAge: int(sessionTTL.Seconds()), HttpOnly: true, SameSite: http.SameSiteLaxMode}
	return &Sessions{cookies: cs, store: store, idle: idle}
}

// isHTTPS reports whether the browser talks to Herald over HTTPS, directly or through a
// trusted proxy that says so (see forwarded).
func isHTTPS(r *http.Request) bool {
	https, _ := r.Context().Value(httpsKey{}).(bool)
	return r.TLS != nil || https
}

func (s *Sessions) cookie(r *http.Request) *sessions.Session {
	// A cookie that fails verification yields a new, empty session: treated as signed out.
	sess, _ := s.cookies.Get(r, sessionName)
	sess.Options.Secure = isHTTPS(r)
	return sess
}

// Start begins a fresh session for u, revoking the one the browser had, if any.
func (s *Sessions) Start(c *gin.Context, u *access.User) error {
	sess := s.cookie(c.Request)
	if old, ok := sess.Values[tokenKey].(string); ok {
		if err := s.store.Access().DeleteSession(c.Request.Context(), old); err != nil {
			return err
		}
	}
	token, err := s.store.Access().CreateSession(c.Request.Context(), u.ID, c.ClientIP(), c.Request.UserAgent(), sessionTTL)
	if err != nil {
		return err
	}
	// The rest of the request runs in the new session: a page rendered after a
	// password change lists it as this one.
	row, _, err := s.store.Access().SessionUser(c.Request.Context(), token, s.idle)
	if err != nil {
		return err
	}
	c.Set(handlers.SessionKey, row)
	sess.Values = map[any]any{tokenKey: token}
	return sess.Save(c.Request, c.Writer)
}

// End revokes the browser's session and clears its cookie.
func (s *Sessions) End(c *gin.Context) error {
	sess := s.cookie(c.Request)
	if token, ok := sess.Values[tokenKey].(string); ok {
		if err := s.store.Access().DeleteSession(c.Request.Context(), token); err != nil {
			return err
		}
	}
	return s.clear(c, sess)
}

// EndAll revokes every session of u, this browser's included, and clears its cookie.
func (s *Sessions) EndAll(c *gin.Context, u *access.User) error {
	if err := s.store.Access().DeleteUserSessions(c.Request.Context(), u.ID); err != nil {
		return err
	}
	return s.clear(c, s.cookie(c.Request))
}

func (s *Sessions) clear(c *gin.Context, sess *sessions.Session) error {
	sess.Values = map[any]any{}
	sess.Options.MaxAge = -1
	return sess.Save(c.Request, c.Writer)
}

// Active lists the live sessions of a user, most recently seen first.
func (s *Sessions) Active(c *gin.Context, userID int64) ([]access.Session, error) {
	return s.store.Access().UserSessions(c.Request.Context(), userID, s.idle)
}

// Current returns the signed-in session of a request and its user, or nils.
func (s *Sessions) Current(r *http.Request) (*access.Session, *access.User, error) {
	token, ok := s.cookie(r).Values[tokenKey].(string)
	if !ok {
		return nil, nil, nil
	}
	sess, u, err := s.store.Access().SessionUser(r.Context(), token, s.idle)
	if errors.Is(err, kernel.ErrNotFound) {
		return nil, nil, nil
	}
	return sess, u, err
}

// SetNotice keeps the notice of an action for the next page this browser shows: the
// notice's key (one of a fixed set) and the thing it is about travel in the signed
// cookie, never in the URL, where anyone could write a link that puts words on the page.
func (s *Sessions) SetNotice(c *gin.Context, key, subject string) error {
	sess := s.cookie(c.Request)
	if r := []rune(subject); len(r) > noticeSubjectLen {
		subject = string(r[:noticeSubjectLen]) + "…"
	}
	sess.Values[noticeKey], sess.Values[noticeSubjectKey] = key, subject
	return sess.Save(c.Request, c.Writer)
}

// TakeNotice returns the pending notice, if any, and forgets it: it shows once.
func (s *Sessions) TakeNotice(c *gin.Context) (key, subject string) {
	sess := s.cookie(c.Request)
	key, ok := sess.Values[noticeKey].(string)
	if !ok {
		return "", ""
	}
	subject, _ = sess.Values[noticeSubjectKey].(string)
	delete(sess.Values, noticeKey)
	delete(sess.Values, noticeSubjectKey)
	if err := sess.Save(c.Request, c.Writer); err != nil {
		return "", ""
	}
	return key, subject
}
