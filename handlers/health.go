package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// Healthz answers while the process is alive.
func (h *Handlers) Healthz(c *gin.Context) {
	c.String(http.StatusOK, "ok")
}

// Readyz answers 200 when the database and Redis are reachable, 503 naming the one that
// is not otherwise.
func (h *Handlers) Readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{"database": "ok", "redis": "ok"}
	status := http.StatusOK
	if err := h.Store.Ping(ctx); err != nil {
		checks["database"], status = err.Error(), http.StatusServiceUnavailable
	}
	if err := h.PingRedis(ctx); err != nil {
		checks["redis"], status = err.Error(), http.StatusServiceUnavailable
	}
	c.JSON(status, checks)
}
