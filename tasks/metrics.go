package tasks

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the worker's Prometheus instruments.
type Metrics struct {
	messages        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
	throttled       *prometheus.CounterVec
}

// NewMetrics registers the worker's instruments with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_messages_total",
			Help: "Messages that reached a final state (sent, stopped), by platform and account.",
		}, []string{"platform", "account", "state"}),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_attempt_duration_seconds",
			Help:    "Duration of provider calls, by platform, account and outcome (sent or the error class).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15},
		}, []string{"platform", "account", "outcome"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_throttled_total",
			Help: "Limiter decisions that made a message wait, by account and the window that was full.",
		}, []string{"account", "window"}),
	}
	reg.MustRegister(m.messages, m.attemptDuration, m.throttled)
	return m
}

func (m *Metrics) attempt(platform, account, outcome string, took time.Duration) {
	if m != nil {
		m.attemptDuration.WithLabelValues(platform, account, outcome).Observe(took.Seconds())
	}
}

func (m *Metrics) final(platform, account, state string) {
	if m != nil {
		m.messages.WithLabelValues(platform, account, state).Inc()
	}
}

func (m *Metrics) throttle(account, window string) {
	if m != nil {
		m.throttled.WithLabelValues(account, window).Inc()
	}
}
