package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/audit"
	"herald/handlers"
	"herald/i18n"
	"herald/kernel"
	"herald/models"
)

// apiAuth authenticates `Authorization: Bearer <api key>` and requires a scope. Keys
// come from a cache that trusts a key for at most access.APIKeyCacheTTL, so a busy
// API does not read the database on every request.
type apiAuth struct {
	store *models.Store
	keys  *access.APIKeyCache
	log   *slog.Logger

	mu       sync.Mutex
	lastUsed map[int64]time.Time // last time last_used_at was written, per key
}

// touchEvery limits last_used_at writes to one a minute per key.
const touchEvery = time.Minute

func newAPIAuth(store *models.Store, log *slog.Logger) *apiAuth {
	return &apiAuth{store: store, keys: store.Access().NewAPIKeyCache(time.Now), log: log, lastUsed: map[int64]time.Time{}}
}

// require returns middleware that lets through keys with the scope (admin has all).
func (a *apiAuth) require(scope string) gin.HandlerFunc {
	return func(c *gin.Context) {
		k := handlers.CurrentAPIKey(c)
		if k == nil {
			var ok bool
			if k, ok = a.authenticate(c); !ok {
				return
			}
		}
		if !k.HasScope(scope) {
			handlers.APIError(c, http.StatusForbidden, "forbidden", i18n.T(c.Request.Context(), "api.missing_scope", "Scope", scope), "")
			return
		}
		c.Next()
	}
}

func (a *apiAuth) authenticate(c *gin.Context) (*access.APIKey, bool) {
	secret, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	secret = strings.TrimSpace(secret)
	if !ok || secret == "" {
		a.auditFailure(c, "", "no API key")
		c.Header("WWW-Authenticate", `Bearer realm="herald"`)
		handlers.APIError(c, http.StatusUnauthorized, "unauthorized", i18n.T(c.Request.Context(), "api.no_key"), "")
		return nil, false
	}
	k, err := a.keys.Authenticate(c.Request.Context(), secret)
	if errors.Is(err, kernel.ErrNotFound) {
		a.auditFailure(c, access.APIKeyPrefix(secret), "unknown or revoked API key")
		c.Header("WWW-Authenticate", `Bearer realm="herald", error="invalid_token"`)
		handlers.APIError(c, http.StatusUnauthorized, "unauthorized", i18n.T(c.Request.Context(), "api.unknown_key"), "")
		return nil, false
	}
	if err != nil {
		a.log.Error("api key lookup", "error", err)
		handlers.DatabaseUnavailable(c)
		return nil, false
	}
	if k.Expired(kernel.Now()) {
		a.auditFailure(c, k.Prefix, "expired API key")
		c.Header("WWW-Authenticate", `Bearer realm="herald", error="invalid_token"`)
		handlers.APIError(c, http.StatusUnauthorized, "key_expired",
			i18n.T(c.Request.Context(), "api.key_expired", "At", k.ExpiresAt.UTC().Format(time.RFC3339)), "")
		return nil, false
	}
	c.Set(handlers.APIKeyKey, k)
	a.touch(k.ID)
	return k, true
}

// auditFailure records a refused API key, at most once a minute per key prefix and
// address: anyone can send wrong keys as fast as they like.
func (a *apiAuth) auditFailure(c *gin.Context, prefix, reason string) {
	actor := "apikey:unknown"
	if prefix != "" {
		actor = "apikey:hk_" + prefix + "_…"
	}
	e := audit.Entry{Actor: actor, ActorType: "api_key", Action: "apikey.auth_failed", TargetType: "api_key",
		TargetID: prefix, Detail: "status 401: " + reason, IP: c.ClientIP()}.WithParams(audit.Params{"prefix": prefix, "status": "401"})
	if _, err := a.store.AuditLog().Once(c.Request.Context(), e, "apikey "+prefix+" "+c.ClientIP(), time.Minute); err != nil {
		a.log.Error("audit log write failed", "action", e.Action, "error", err)
	}
}

func (a *apiAuth) touch(id int64) {
	a.mu.Lock()
	due := time.Since(a.lastUsed[id]) > touchEvery
	if due {
		a.lastUsed[id] = time.Now()
	}
	a.mu.Unlock()
	if due {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.store.Access().TouchAPIKey(ctx, id); err != nil {
			a.log.Warn("record api key use", "error", err)
		}
	}
}
