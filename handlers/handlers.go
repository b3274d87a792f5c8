// Package handlers holds Herald's thin HTTP handlers, one file per resource: each parses
// and validates its input, calls dispatch or the store, and renders a templ view or JSON.
package handlers

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/channels"
	"herald/delivery"
	"herald/dispatch"
	"herald/i18n"
	"herald/kernel"
	"herald/models"
	"herald/sending"
	"herald/views"
)

// SessionManager starts, lists and ends console sessions and carries one-time notices
// from an action to the page after it; the web package implements it.
type SessionManager interface {
	Start(c *gin.Context, u *access.User) error
	End(c *gin.Context) error
	// EndAll revokes every session of u, this browser's included.
	EndAll(c *gin.Context, u *access.User) error
	// Active lists u's live sessions, most recently seen first.
	Active(c *gin.Context, userID int64) ([]access.Session, error)
	// SetNotice keeps a notice (a key of notices and its subject) for the next page.
	SetNotice(c *gin.Context, key, subject string) error
	// TakeNotice returns the kept notice once, or "".
	TakeNotice(c *gin.Context) (key, subject string)
}

// Handlers carries what the handlers need.
type Handlers struct {
	Store    *models.Store
	Dispatch *dispatch.Dispatcher
	Sessions SessionManager
	Log      *slog.Logger
	// PingRedis checks that Redis answers, for /readyz.
	PingRedis func(context.Context) error
	// Limiter reports accounts' current use of their limits.
	Limiter LimitUsage
	// QueueDepths reads the message queues for the dashboard, most urgent first.
	QueueDepths func() []delivery.QueueDepth
	// Stats counts message outcomes for the dashboard.
	Stats *models.Stats
	// Channels tests accounts' connections.
	Channels *channels.Registry
	// Location is HERALD_TIMEZONE: the days and times pages show and read.
	Location *time.Location
	// PublicURL is HERALD_PUBLIC_URL: the base of the links Herald gives out (an
	// integration's push URL).
	PublicURL string
}

// LimitUsage reports an account's current use of each of its limited windows; the rate
// limiter (tasks.Limiter) implements it.
type LimitUsage interface {
	// AccountUsage counts a group robot account's robots together, against their
	// limits together.
	AccountUsage(ctx context.Context, a *sending.Account) ([]delivery.Usage, error)
}

// UserKey is the gin context key under which the web middleware stores the signed-in user.
const UserKey = "herald.user"

// SessionKey is the gin context key under which the web middleware stores the
// signed-in user's session.
const SessionKey = "herald.session"

// CurrentSession returns the signed-in user's session, or nil.
func CurrentSession(c *gin.Context) *access.Session {
	return fromContext[access.Session](c, SessionKey)
}

// CurrentUser returns the signed-in user, or nil.
func CurrentUser(c *gin.Context) *access.User { return fromContext[access.User](c, UserKey) }

// fromContext returns what the web middleware stored under key, or nil.
func fromContext[T any](c *gin.Context, key string) *T {
	v, _ := c.Get(key)
	t, _ := v.(*T)
	return t
}

// tr translates a catalog message into the language of the request; args are the
// message's data as name, value pairs.
func tr(c *gin.Context, key string, args ...any) string {
	return i18n.T(c.Request.Context(), key, args...)
}

// page returns the layout data for a console page.
func page(c *gin.Context, title, active string) views.Page {
	p := views.Page{Title: title, Active: active}
	if u := CurrentUser(c); u != nil {
		p.Username, p.Role, p.Language = u.Username, string(u.Role), u.Language
	}
	// The path alone: a query could carry text into the page that nobody wrote there.
	p.Path = c.Request.URL.Path
	if c.Request.Method == http.MethodPost {
		// A page answering a form (the changes that succeed mostly redirect instead)
		// stands in the history as the page the form was on, so that a reload never
		// sends it again; the language switch comes back there too.
		p.Path = formPage(c)
		p.Replace = p.Path
	}
	return p
}

// formPage is the path of the console page a form was posted from: the Referer's, when
// it is this console's (the console sends it to itself, Referrer-Policy same-origin),
// else the path posted to.
func formPage(c *gin.Context) string {
	if ref, err := url.Parse(c.GetHeader("Referer")); err == nil && ref.Host == c.Request.Host &&
		strings.HasPrefix(ref.Path, "/") && !strings.HasPrefix(ref.Path, "//") {
		return ref.Path
	}
	return c.Request.URL.Path
}

// render writes a templ component with a status code.
func render(c *gin.Context, status int, comp templ.Component) {
	c.Status(status)
	c.Header("Content-Type", "text/html; charset=utf-8")
	// Rendered even when the request's deadline has passed (templ stops at a done
	// context): the page that says the database timed out must still be shown.
	if err := comp.Render(context.WithoutCancel(c.Request.Context()), c.Writer); err != nil {
		_ = c.Error(err)
	}
}

// ErrorPage renders a console error page with the catalog message key and its data as
// name, value pairs; the web middleware uses it for 403 and 404. The sentence names
// nothing taken from the request (a path, an id): a link could make the page say
// anything, in Herald's own words and layout.
func ErrorPage(c *gin.Context, status int, key string, args ...any) {
	errorPage(c, status, i18n.T(c.Request.Context(), key, args...))
}

// errorPage renders the console's error page with a sentence (see ErrorPage).
func errorPage(c *gin.Context, status int, message string) {
	p := page(c, tr(c, "title.error"), "")
	// The language switch of an error page comes back to the dashboard, not to the path
	// asked for: a made-up path must not travel on in the page's form.
	p.Path = "/"
	render(c, status, views.ErrorPage(p, status, message))
	c.Abort()
}

// ConsoleUnavailable shows the console's page for a database that did not answer in time.
func ConsoleUnavailable(c *gin.Context) { showAnswer(c, unavailable(c, onPage)) }

// fieldErrors turns a validation error into a field → message map for a form; ok is
// false for any other error.
func fieldErrors(c *gin.Context, err error) (map[string]string, bool) {
	var fe *kernel.FieldError
	if errors.As(err, &fe) {
		return map[string]string{fe.Field: fe.In(c.Request.Context())}, true
	}
	return nil, false
}

func isNotFound(err error) bool { return errors.Is(err, kernel.ErrNotFound) }
