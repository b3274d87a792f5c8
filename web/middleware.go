package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/handlers"
	"herald/i18n"
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
		// Checked first: the line's values (the client's address above all) cost more to
		// gather than the request's other bookkeeping, for a line usually not written.
		if !log.Enabled(c.Request.Context(), level) {
			return
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
			// Refused before the request's language is settled: the browser's, if it asks
			// for one of the console's.
			c.String(http.StatusForbidden, i18n.In(i18n.Match(c.GetHeader("Accept-Language")), "api.cross_origin"))
			c.Abort()
			return
		}
		c.Next()
	}
}

// withDeadline bounds how long a request may wait, on the database above all: a stalled
// database answers 503 within the bound instead of holding callers until their own
// timeouts pile requests up. Slow routes (slowRoutes) get the longer bound.
func withDeadline(normal, slow time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		d := normal
		if slowRoutes[c.Request.Method+" "+c.FullPath()] {
			d = slow
		}
		ctx, cancel := context.WithTimeout(c.Request.Context(), d)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
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

// withLanguage renders the request in the browser's language when it asks for one of
// the console's, else in def (HERALD_DEFAULT_LANGUAGE). userLanguage refines it for
// signed-in users, apiLanguage for the JSON API.
func withLanguage(def string) gin.HandlerFunc {
	return func(c *gin.Context) {
		lang := i18n.Match(c.GetHeader("Accept-Language"), def)
		c.Request = c.Request.WithContext(i18n.WithLang(c.Request.Context(), lang))
		c.Next()
	}
}

// userLanguage renders a signed-in user's pages in the language they chose, if any.
// It runs after loadUser.
func userLanguage(c *gin.Context) {
	if u := handlers.CurrentUser(c); u != nil && i18n.Valid(u.Language) {
		c.Request = c.Request.WithContext(i18n.WithLang(c.Request.Context(), u.Language))
	}
	c.Next()
}

// apiLanguage answers the JSON API in English unless the caller asks for Chinese with
// Accept-Language: codes and field names never change, only the message.
func apiLanguage(c *gin.Context) {
	lang := i18n.English
	if i18n.Match(c.GetHeader("Accept-Language")) == i18n.Chinese {
		lang = i18n.Chinese
	}
	c.Request = c.Request.WithContext(i18n.WithLang(c.Request.Context(), lang))
	c.Next()
}

// loadUser puts the signed-in user and their session, if any, into the context. It does
// not refuse anyone.
func loadUser(s *Sessions, log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		// What the console answers is for that user's eyes: no browser or proxy may
		// store it.
		c.Header("Cache-Control", "no-store")
		sess, u, err := s.Current(c.Request)
		if err != nil {
			log.Error("load session", "error", err)
			handlers.ConsoleUnavailable(c)
			return
		}
		if u != nil {
			c.Set(handlers.UserKey, u)
			c.Set(handlers.SessionKey, sess)
		}
		c.Next()
	}
}

// passwordRoutes are the console routes a user who must change an initial password may
// use meanwhile: their own page (the password form, the language, their sessions).
var passwordRoutes = map[string]bool{"/password": true, "/language": true, "/sessions/revoke": true, "/sessions/:id/sign-out": true}

// requireRole lets through signed-in users with at least role need. Anonymous page
// requests go to the login page; anonymous htmx requests are told to go there too.
// A user who must change an initial password goes to the password form first. Signed-in
// users without the role get 403.
func requireRole(need access.Role) gin.HandlerFunc {
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
		if u.MustChangePassword && !passwordRoutes[c.FullPath()] {
			if c.GetHeader("HX-Request") == "true" {
				c.Header("HX-Redirect", "/password")
				c.AbortWithStatus(http.StatusForbidden)
				return
			}
			c.Redirect(http.StatusSeeOther, "/password")
			c.Abort()
			return
		}
		if !u.Role.Allows(need) {
			handlers.ErrorPage(c, http.StatusForbidden, "error.role", "Role", i18n.Name(c.Request.Context(), "role", string(u.Role)), "Need", i18n.Name(c.Request.Context(), "role", string(need)))
			return
		}
		c.Next()
	}
}

// contentSecurityPolicy lets console pages use only Herald's own scripts, styles,
// images and connections: no inline script or style attribute, no eval, no plugins, no
// framing, and forms that post to Herald only. Asynqmon's pages have their own policy.
const contentSecurityPolicy = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"

// securityHeaders sets headers every response should carry, and HSTS when the browser
// came over HTTPS.
func securityHeaders() gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		if isHTTPS(c.Request) {
			h.Set("Strict-Transport-Security", "max-age=31536000; includeSubDomains")
		}
		c.Next()
	}
}

// Console request bodies: forms are small; only the CSV imports take a file.
const (
	maxFormBytes = 64 << 10
	// maxUploadBytes is an import's file plus room for the rest of its form.
	maxUploadBytes = handlers.MaxImportBytes + 1<<20
	// maxMultipartMemory is how much of an upload is held in memory; net/http keeps the
	// rest in a temporary file, removed when the request ends.
	maxMultipartMemory = 1 << 20
)

// formBody caps a console request's body at limit bytes and parses its form before the
// handler runs, so a body over the cap is answered 413 instead of reaching the handler
// cut short. A declared length over the cap is refused before anything is read.
// Multipart bodies are accepted only where uploads is set.
func formBody(limit int64, uploads bool) gin.HandlerFunc {
	tooLarge := func(c *gin.Context) {
		handlers.ErrorPage(c, http.StatusRequestEntityTooLarge, "error.too_large", "Size", byteSize(limit))
	}
	return func(c *gin.Context) {
		r := c.Request
		if r.ContentLength > limit {
			tooLarge(c)
			return
		}
		r.Body = http.MaxBytesReader(c.Writer, r.Body, limit)
		mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		var err error
		switch {
		case mediaType == "application/x-www-form-urlencoded":
			err = r.ParseForm()
		case strings.HasPrefix(mediaType, "multipart/") && !uploads:
			handlers.ErrorPage(c, http.StatusUnsupportedMediaType, "error.form_no_file")
			return
		case mediaType == "multipart/form-data":
			err = r.ParseMultipartForm(maxMultipartMemory)
		}
		if _, over := errors.AsType[*http.MaxBytesError](err); over {
			tooLarge(c)
			return
		}
		if err != nil {
			handlers.ErrorPage(c, http.StatusBadRequest, "error.form_unreadable", "Reason", err.Error())
			return
		}
		c.Next()
	}
}

// byteSize writes a limit the way people read it: 64 KB, 6 MB.
func byteSize(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d KB", n>>10)
}
