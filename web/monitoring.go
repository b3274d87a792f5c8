package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"

	"herald/access"
	"herald/handlers"
	"herald/views"
)

// MonitoringPath is where Asynqmon is mounted inside the console (views.MonitoringPath,
// which the console's links use too).
const MonitoringPath = views.MonitoringPath

// monitoring serves Asynqmon behind the console login: operators and admins get it
// read-write, viewers read-only (Asynqmon then refuses every non-GET request).
type monitoring struct {
	readWrite, readOnly *asynqmonUI
}

// asynqmonUI is one Asynqmon instance and its page, made to keep to a
// Content-Security-Policy of its own.
//
// Asynqmon ships a prebuilt React app. Its page starts it with two inline scripts, which
// the policy allows by their hashes (computed here, so an upgrade keeps working); its
// Material UI inserts <style> elements at run time, hence 'unsafe-inline' for styles
// only. The page also links Google Fonts (Roboto and Material Icons): they are removed
// rather than allowed, so the console never loads anything from the internet; the app
// draws its icons as SVG and falls back to the system's sans-serif font.
type asynqmonUI struct {
	handler *asynqmon.HTTPHandler
	page    []byte
	policy  string
}

var (
	inlineScript = regexp.MustCompile(`(?s)<script>(.*?)</script>`)
	webFontLink  = regexp.MustCompile(`<link[^>]*href="https://fonts\.googleapis\.com/[^"]*"[^>]*>`)
)

// backToHerald is the way back from Asynqmon, which has no link out of its own: a small
// button in the top right corner, over Asynqmon's empty end of its app bar, drawn in
// the console's colours so it shows on Asynqmon's light and dark themes alike. It names
// the product, as the console's own top bar does, so it needs no translation; its
// style is an attribute, which the page's policy allows ('unsafe-inline' for styles).
const backToHerald = `<a id="back-to-herald" href="/" style="position:fixed;top:12px;right:16px;z-index:1300;` +
	`padding:6px 12px;border-radius:6px;background:#0f172a;color:#fff;font:500 14px/1.4 system-ui,sans-serif;` +
	`text-decoration:none;box-shadow:0 1px 3px rgba(0,0,0,.3)">← Herald</a>`

func newAsynqmonUI(redis asynq.RedisConnOpt, readOnly bool) *asynqmonUI {
	h := asynqmon.New(asynqmon.Options{RootPath: MonitoringPath, RedisConnOpt: redis, ReadOnly: readOnly})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, MonitoringPath+"/", nil))
	if rec.Code != http.StatusOK {
		// The page is a template embedded in the Asynqmon module: it cannot fail at run time.
		panic(fmt.Sprintf("web: render the Asynqmon page: status %d: %s", rec.Code, rec.Body))
	}
	page := webFontLink.ReplaceAll(rec.Body.Bytes(), nil)
	page = bytes.Replace(page, []byte("<body>"), []byte("<body>"+backToHerald), 1)
	scripts := []string{"'self'"}
	for _, m := range inlineScript.FindAllSubmatch(page, -1) {
		sum := sha256.Sum256(m[1])
		scripts = append(scripts, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	return &asynqmonUI{handler: h, page: page,
		policy: "default-src 'self'; script-src " + strings.Join(scripts, " ") + "; style-src 'self' 'unsafe-inline'; " +
			"frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"}
}

// serveHTTP answers one Asynqmon request: its page for the app's own routes (which have
// no file extension), Asynqmon itself for its API and files.
func (ui *asynqmonUI) serveHTTP(c *gin.Context) {
	c.Header("Content-Security-Policy", ui.policy)
	p := strings.TrimPrefix(c.Request.URL.Path, MonitoringPath)
	switch {
	case strings.HasPrefix(p, "/api/"):
	case strings.HasPrefix(p, "/static/"):
		// Content-hashed build files.
		c.Header("Cache-Control", "private, max-age=31536000, immutable")
	case path.Ext(p) == "" && (c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead):
		c.Data(http.StatusOK, "text/html; charset=utf-8", ui.page)
		return
	}
	ui.handler.ServeHTTP(c.Writer, c.Request)
}

func newMonitoring(redis asynq.RedisConnOpt) *monitoring {
	return &monitoring{readWrite: newAsynqmonUI(redis, false), readOnly: newAsynqmonUI(redis, true)}
}

// serve hands the request to the Asynqmon instance the user's role allows. Asynqmon
// routes on the full path, so the prefix is not stripped.
func (m *monitoring) serve(c *gin.Context) {
	if c.Request.URL.Path == MonitoringPath {
		c.Redirect(http.StatusMovedPermanently, MonitoringPath+"/")
		return
	}
	u := handlers.CurrentUser(c)
	if u != nil && u.Role.Allows(access.RoleOperator) {
		m.readWrite.serveHTTP(c)
		return
	}
	m.readOnly.serveHTTP(c)
}

// auditUnsafe audits every request to Asynqmon other than a GET once it is answered:
// Asynqmon changes queues (pause, delete, run tasks) where no Herald handler sees it.
func auditUnsafe(h *handlers.Handlers) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Next()
		if c.Request.Method != http.MethodGet {
			target := strings.TrimPrefix(strings.TrimPrefix(c.Request.URL.Path, MonitoringPath), "/api")
			h.AuditRequest(c, "monitoring."+strings.ToLower(c.Request.Method), "monitoring", target)
		}
	}
}

// Close releases Asynqmon's Redis connections.
func (m *monitoring) Close() error {
	m.readOnly.handler.Close()
	return m.readWrite.handler.Close()
}
