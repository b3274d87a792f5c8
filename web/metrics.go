package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"herald/models"
)

// stateCollector reads, at scrape time, what lives outside the process: Asynq's queue
// sizes and the age of the oldest due message.
type stateCollector struct {
	inspector *asynq.Inspector
	store     *models.Store
	log       *slog.Logger

	queueSize *prometheus.Desc
	oldestDue *prometheus.Desc
}

func newStateCollector(inspector *asynq.Inspector, store *models.Store, log *slog.Logger) *stateCollector {
	return &stateCollector{inspector: inspector, store: store, log: log,
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
	for _, q := range queues {
		info, err := s.inspector.GetQueueInfo(q)
		if err != nil {
			s.log.Warn("metrics: queue info", "queue", q, "error", err)
			continue
		}
		for state, n := range map[string]int{"pending": info.Pending, "active": info.Active, "scheduled": info.Scheduled,
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

// metricsHandler serves reg plus the scrape-time state.
func metricsHandler(reg *prometheus.Registry, state *stateCollector) http.Handler {
	reg.MustRegister(state)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
