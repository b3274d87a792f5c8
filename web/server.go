// Package web assembles Herald's HTTP server: the routes (all in routes.go), middleware
// for logging, recovery, cross-origin protection, sessions and roles, and the mounts.
package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/hibiken/asynq"

	"herald/handlers"
	"herald/i18n"
)

// Options configure the HTTP server.
type Options struct {
	Addr     string
	Location *time.Location
	Log      *slog.Logger
	// Redis is the connection Asynqmon inspects, the same the workers use.
	Redis asynq.RedisConnOpt
	// Metrics serves /metrics (see NewMetrics).
	Metrics http.Handler
	// MetricsToken, when set, is the bearer token every /metrics request must carry; the
	// console serves /metrics only then (HERALD_METRICS_TOKEN).
	MetricsToken string
	// DefaultLanguage is the console's language when neither the user nor the browser
	// chose one (HERALD_DEFAULT_LANGUAGE); empty means Chinese.
	DefaultLanguage string
	// TrustedProxies are the addresses and CIDR ranges of the proxies whose
	// X-Forwarded-For and X-Forwarded-Proto are believed (HERALD_TRUSTED_PROXIES);
	// none by default, so a client can never choose the address its sign-in attempts
	// count against.
	TrustedProxies []string
}

func (o Options) defaultLanguage() string {
	if i18n.Valid(o.DefaultLanguage) {
		return o.DefaultLanguage
	}
	return i18n.Chinese
}

// httpsKey marks, in a request's context, a request that came over HTTPS to a trusted
// proxy in front of Herald (see forwarded).
type httpsKey struct{}

// forwarded believes X-Forwarded-Proto only from the configured proxies
// (HERALD_TRUSTED_PROXIES); gin's SetTrustedProxies does the same for X-Forwarded-For.
// From any other peer the headers could claim anything.
func forwarded(proxies []netip.Prefix) gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.Header.Get("X-Forwarded-Proto") == "https" && fromProxy(proxies, c.Request) {
			c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), httpsKey{}, true))
		}
		c.Next()
	}
}

// fromProxy reports whether r comes straight from one of the proxies.
func fromProxy(proxies []netip.Prefix, r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := ap.Addr().Unmap()
	return slices.ContainsFunc(proxies, func(p netip.Prefix) bool { return p.Contains(ip) })
}

// proxyPrefixes reads the trusted proxies, addresses or CIDR ranges (config has
// checked them).
func proxyPrefixes(list []string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		} else if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		}
	}
	return out
}

// NewHandler returns the complete HTTP handler: console, API and operations endpoints.
// Close releases what it holds (Asynqmon's Redis connections).
func NewHandler(h *handlers.Handlers, s *Sessions, opts Options) (handler http.Handler, close func() error) {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.MaxMultipartMemory = maxMultipartMemory
	// X-Forwarded-For names the client only when a configured proxy sent it.
	if err := r.SetTrustedProxies(opts.TrustedProxies); err != nil {
		opts.Log.Error("HERALD_TRUSTED_PROXIES: trusting none", "error", err)
		_ = r.SetTrustedProxies(nil)
	}
	r.Use(recoverPanics(opts.Log), forwarded(proxyPrefixes(opts.TrustedProxies)), logRequests(opts.Log), securityHeaders(), crossOrigin(),
		withDeadline(requestDeadline, slowDeadline), withLocation(opts.Location), withLanguage(opts.defaultLanguage()))
	r.NoRoute(unrouted(s, opts.Log), userLanguage, func(c *gin.Context) {
		if strings.HasPrefix(c.Request.URL.Path, "/api/") {
			handlers.APIError(c, http.StatusNotFound, "not_found", i18n.T(c.Request.Context(), "api.no_endpoint"), "")
			return
		}
		handlers.ErrorPage(c, http.StatusNotFound, "error.no_page")
	})
	r.NoMethod(unrouted(s, opts.Log), userLanguage, func(c *gin.Context) {
		if strings.HasPrefix(c.Request.URL.Path, "/api/") {
			handlers.APIError(c, http.StatusMethodNotAllowed, "method_not_allowed",
				i18n.T(c.Request.Context(), "error.api_method_not_allowed", "Method", c.Request.Method), "")
			return
		}
		handlers.ErrorPage(c, http.StatusMethodNotAllowed, "error.method_not_allowed")
	})
	mon := newMonitoring(opts.Redis)
	// The console listener faces browsers: without a token, metrics stay on
	// HERALD_METRICS_ADDR.
	var metrics gin.HandlerFunc
	if opts.MetricsToken != "" {
		metrics = metricsRoute(opts.Metrics, opts.MetricsToken)
	}
	routes(r, h, gin.HandlersChain{loadUser(s, opts.Log), userLanguage}, newAPIAuth(h.Store, opts.Log), mon, metrics)
	return r, mon.Close
}

// unrouted settles the language of a request no route takes (404, 405) as its route
// would have: the API's own (English unless asked for Chinese); for console pages the
// signed-in user's choice (userLanguage follows it in the chain), whose navigation the
// error page then shows.
func unrouted(s *Sessions, log *slog.Logger) gin.HandlerFunc {
	load := loadUser(s, log)
	return func(c *gin.Context) {
		if strings.HasPrefix(c.Request.URL.Path, "/api/") {
			apiLanguage(c)
			return
		}
		load(c)
	}
}

// NewOpsHandler serves only /healthz, /readyz and /metrics, for processes without the
// console (split worker and scheduler roles).
func NewOpsHandler(h *handlers.Handlers, opts Options) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(recoverPanics(opts.Log))
	r.GET("/healthz", h.Healthz)
	r.GET("/readyz", h.Readyz)
	r.GET("/metrics", metricsRoute(opts.Metrics, opts.MetricsToken))
	return r
}

// NewServer returns an http.Server with timeouts suited to the console and API.
func NewServer(addr string, handler http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
}
