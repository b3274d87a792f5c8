package web

import (
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"

	"herald/handlers"
	"herald/models"
	"herald/views"
)

// logRequests writes one structured line per request.
func logRequests(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		level := slog.LevelDebug
		if c.Writer.Status() >= 500 {
			level = slog.LevelError
		}
		log.Log(c.Request.Context(), level, "http", "method", c.Request.Method, "path", c.Request.URL.Path,
			"status", c.Writer.Status(), "duration_ms", time.Since(start).Milliseconds(), "ip", c.ClientIP())
	}
}

// recoverPanics turns a panic in a handler into a logged 500.
func recoverPanics(log *slog.Logger) gin.HandlerFunc {
	return gin.CustomRecoveryWithWriter(nil, func(c *gin.Context, err any) {
		log.Error("panic", "path", c.Request.URL.Path, "error", err)
		c.AbortWithStatus(http.StatusInternalServerError)
	})
}

// crossOrigin refuses unsafe cross-origin browser requests with Go's
// http.CrossOriginProtection (Sec-Fetch-Site / Origin checks), which needs no token.
func crossOrigin() gin.HandlerFunc {
	cop := http.NewCrossOriginProtection()
	return func(c *gin.Context) {
		if err := cop.Check(c.Request); err != nil {
			c.String(http.StatusForbidden, "cross-origin request refused")
			c.Abort()
			return
		}
		c.Next()
	}
}

// withLocation makes rendered times show in the configured time zone.
func withLocation(loc *time.Location) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Request = c.Request.WithContext(views.WithLocation(c.Request.Context(), loc))
		c.Next()
	}
}

// loadUser puts the signed-in user and their session, if any, into the context. It does
// not refuse anyone.
func loadUser(s *Sessions, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		sess, u, err := s.Current(c.Request)
		if err != nil {
			log.Error("load session", "error", err)
			c.AbortWithStatus(http.StatusServiceUnavailable)
			return
		}
		if u != nil {
			c.Set(handlers.UserKey, u)
			c.Set(handlers.SessionKey, sess)
		}
		c.Next()
	}
}

// requireRole lets through signed-in users with at least role need. Anonymous page
// requests go to the login page; anonymous htmx requests are told to go there too.
// Signed-in users without the role get 403.
func requireRole(need models.Role) gin.HandlerFunc {
	return func(c *gin.Context) {
		u := handlers.CurrentUser(c)
		if u == nil {
			login := "/login?next=" + url.QueryEscape(c.Request.URL.RequestURI())
			if c.GetHeader("HX-Request") == "true" {
				c.Header("HX-Redirect", login)
				c.AbortWithStatus(http.StatusUnauthorized)
				return
			}
			c.Redirect(http.StatusSeeOther, login)
			c.Abort()
			return
		}
		if !u.Role.Allows(need) {
			handlers.ErrorPage(c, http.StatusForbidden, "Your role ("+string(u.Role)+") cannot do this; it needs "+string(need)+".")
			return
		}
		c.Next()
	}
}

// securityHeaders sets headers every console response should carry.
func securityHeaders() gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		c.Next()
	}
}
