package web

import (
	"net/http"

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

// Close releases Asynqmon's Redis connections.
func (m *monitoring) Close() error {
	m.readOnly.Close()
	return m.readWrite.Close()
}
