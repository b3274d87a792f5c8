package web

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"

	"herald/handlers"
	"herald/models"
)

// MonitoringPath is where Asynqmon is mounted inside the console.
const MonitoringPath = "/monitoring"

// monitoring serves Asynqmon behind the console login: operators and admins get it
// read-write, viewers read-only (Asynqmon then refuses every non-GET request).
type monitoring struct {
	readWrite, readOnly *asynqmon.HTTPHandler
}

func newMonitoring(redis asynq.RedisConnOpt) *monitoring {
	return &monitoring{
		readWrite: asynqmon.New(asynqmon.Options{RootPath: MonitoringPath, RedisConnOpt: redis}),
		readOnly:  asynqmon.New(asynqmon.Options{RootPath: MonitoringPath, RedisConnOpt: redis, ReadOnly: true}),
	}
}

// serve hands the request to the Asynqmon instance the user's role allows. Asynqmon
// routes on the full path, so the prefix is not stripped.
func (m *monitoring) serve(c *gin.Context) {
	if c.Request.URL.Path == MonitoringPath {
		c.Redirect(http.StatusMovedPermanently, MonitoringPath+"/")
		return
	}
	u := handlers.CurrentUser(c)
	if u != nil && u.Role.Allows(models.RoleOperator) {
		m.readWrite.ServeHTTP(c.Writer, c.Request)
		return
	}
	m.readOnly.ServeHTTP(c.Writer, c.Request)
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
	m.readOnly.Close()
	return m.readWrite.Close()
}
