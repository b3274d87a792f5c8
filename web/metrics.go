package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"herald/models"
	"herald/tasks"
)

// stateCollector reads, at scrape time, what lives outside the process: Asynq's queue
// sizes (a message queue's scheduled sends counted from Herald's own schedule too) and
// the age of the oldest due message.
type stateCollector struct {
	inspector *asynq.Inspector
	enq       *tasks.Enqueuer
	store     *models.Store
	log       *slog.Logger

	queueSize *prometheus.Desc
	oldestDue *prometheus.Desc
}

func newStateCollector(inspector *asynq.Inspector, enq *tasks.Enqueuer, store *models.Store, log *slog.Logger) *stateCollector {
	return &stateCollector{inspector: inspector, enq: enq, store: store, log: log,
		queueSize: prometheus.NewDesc("herald_queue_size", "Tasks in an Asynq queue, by state.", []string{"queue", "state"}, nil),
		oldestDue: prometheus.NewDesc("herald_oldest_due_message_age_seconds",
			"How long the longest-waiting due message (pending or failed) has been due; 0 when none is.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (s *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.queueSize
	ch <- s.oldestDue
}

// Collect implements prometheus.Collector.
func (s *stateCollector) Collect(ch chan<- prometheus.Metric) {
	queues, err := s.inspector.Queues()
	if err != nil {
		s.log.Warn("metrics: list queues", "error", err)
	}
	listed := len(queues)
	// A message queue Asynq does not know yet may still hold scheduled sends.
	for _, q := range []string{tasks.QueueHigh, tasks.QueueNormal, tasks.QueueLow} {
		if !slices.Contains(queues, q) {
			queues = append(queues, q)
		}
	}
	for i, q := range queues {
		var info asynq.QueueInfo
		if i < listed {
			got, err := s.inspector.GetQueueInfo(q)
			if err != nil {
				s.log.Warn("metrics: queue info", "queue", q, "error", err)
				continue
			}
			info = *got
		}
		scheduled, err := s.enq.Scheduled(context.Background(), q)
		if err != nil {
			s.log.Warn("metrics: scheduled sends", "queue", q, "error", err)
		}
		for state, n := range map[string]int{"pending": info.Pending, "active": info.Active, "scheduled": info.Scheduled + scheduled,
			"retry": info.Retry, "archived": info.Archived} {
			ch <- prometheus.MustNewConstMetric(s.queueSize, prometheus.GaugeValue, float64(n), q, state)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	age := 0.0
	if at, err := s.store.OldestDue(ctx); err != nil {
		s.log.Warn("metrics: oldest due message", "error", err)
	} else if at != nil {
		age = max(time.Since(*at).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(s.oldestDue, prometheus.GaugeValue, age)
}

// NewMetrics returns the handler of /metrics: the metrics in reg plus, read at scrape
// time, Asynq's queue sizes (through inspector) and the age of the oldest due message.
// Build it once per process: it registers its collector in reg.
func NewMetrics(reg *prometheus.Registry, inspector *asynq.Inspector, enq *tasks.Enqueuer, store *models.Store, log *slog.Logger) http.Handler {
	reg.MustRegister(newStateCollector(inspector, enq, store, log))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// metricsRoute serves metrics, to requests bearing `Authorization: Bearer <token>` only
// when token is set.
func metricsRoute(metrics http.Handler, token string) gin.HandlerFunc {
	want := sha256.Sum256([]byte(token))
	return func(c *gin.Context) {
		if token != "" {
			given, _ := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
			got := sha256.Sum256([]byte(given))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				c.Header("WWW-Authenticate", `Bearer realm="herald metrics"`)
				c.String(http.StatusUnauthorized, "send Authorization: Bearer <HERALD_METRICS_TOKEN>")
				c.Abort()
				return
			}
		}
		metrics.ServeHTTP(c.Writer, c.Request)
	}
}

// NewMetricsHandler serves only /metrics, for the listener of HERALD_METRICS_ADDR.
func NewMetricsHandler(opts Options) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(recoverPanics(opts.Log))
	r.GET("/metrics", metricsRoute(opts.Metrics, opts.MetricsToken))
	return r
}
