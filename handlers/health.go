package handlers

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// Healthz answers while the process is alive.
func (h *Handlers) Healthz(c *gin.Context) {
	c.String(http.StatusOK, "ok")
}

// Readyz answers 200 when the database and Redis are reachable and every account's
// credentials open with the keys Herald holds, 503 naming what is wrong otherwise.
func (h *Handlers) Readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{"database": "ok", "redis": "ok", "accounts": "ok"}
	status := http.StatusOK
	if err := h.Store.Ping(ctx); err != nil {
		checks["database"], status = err.Error(), http.StatusServiceUnavailable
		checks["accounts"] = "not checked"
	} else if names, err := h.Store.Sending().UnreadableAccounts(ctx); err != nil {
		checks["accounts"], status = err.Error(), http.StatusServiceUnavailable
	} else if len(names) > 0 {
		checks["accounts"] = "credentials cannot be decrypted (HERALD_SECRET_KEY changed?); enter them again: " + strings.Join(names, ", ")
		status = http.StatusServiceUnavailable
	}
	if err := h.PingRedis(ctx); err != nil {
		checks["redis"], status = err.Error(), http.StatusServiceUnavailable
	}
	c.JSON(status, checks)
}
