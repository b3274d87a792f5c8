package tasks

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"herald/alert"
	"herald/channels"
	"herald/models"
)

// Metrics are the worker's Prometheus instruments.
type Metrics struct {
	messages        *prometheus.CounterVec
	attemptDuration *prometheus.HistogramVec
	throttled       *prometheus.CounterVec
	heldBySilence   *prometheus.CounterVec
}

// NewMetrics registers the worker's instruments with reg, and the session pools of the
// email accounts that senders reaches, read at each scrape.
func NewMetrics(reg prometheus.Registerer, senders *channels.Registry) *Metrics {
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
		heldBySilence: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_messages_held_total",
			Help: "Messages an active silence held as they came due, by silence id (a message two silences hold counts for each).",
		}, []string{"silence"}),
	}
	reg.MustRegister(m.messages, m.attemptDuration, m.throttled, m.heldBySilence, newSMTPPoolCollector(senders))
	return m
}

// smtpPoolCollector reports the email accounts' SMTP session pools of this process: what
// a relay's connection limit does to an account shows here first.
type smtpPoolCollector struct {
	senders                    *channels.Registry
	open, limit, opened, waits *prometheus.Desc
}

func newSMTPPoolCollector(senders *channels.Registry) *smtpPoolCollector {
	account := []string{"account"}
	return &smtpPoolCollector{
		senders: senders,
		open:    prometheus.NewDesc("herald_smtp_sessions", "SMTP sessions an email account has open or opening in this process.", account, nil),
		limit: prometheus.NewDesc("herald_smtp_session_limit",
			"Sessions an email account keeps to because its relay refused one more with 421, while that holds (a minute); 0 when none.", account, nil),
		opened: prometheus.NewDesc("herald_smtp_connections_opened_total", "SMTP connections an email account opened in this process since its last edit.", account, nil),
		waits: prometheus.NewDesc("herald_smtp_session_waits_total",
			"Messages of an email account that waited for a session under its relay's limit, since its last edit.", account, nil),
	}
}

func (c *smtpPoolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.open
	ch <- c.limit
	ch <- c.opened
	ch <- c.waits
}

func (c *smtpPoolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.senders.SMTPPools() {
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(p.Open), p.Account)
		ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(p.Limit), p.Account)
		ch <- prometheus.MustNewConstMetric(c.opened, prometheus.CounterValue, float64(p.Opened), p.Account)
		ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(p.Waits), p.Account)
	}
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

// NewAlertMetrics registers the alerts' instruments with reg: herald_alert_ack_seconds,
// how long alerts waited for their first acknowledgment (observed by the returned
// function, where acknowledgments are made), herald_alerts, the alerts by state, and
// herald_alerts_unrouted, the open alerts whose latest step called nobody, both read
// from the database at each scrape.
func NewAlertMetrics(reg prometheus.Registerer, store *models.Store) func(time.Duration) {
	ack := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "herald_alert_ack_seconds",
		Help:    "How long alerts waited from opening to their first acknowledgment.",
		Buckets: []float64{30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400}})
	reg.MustRegister(ack, &alertStateCollector{store: store,
		desc: prometheus.NewDesc("herald_alerts", "Alerts by state.", []string{"state"}, nil),
		unrouted: prometheus.NewDesc("herald_alerts_unrouted",
			"Open alerts whose latest escalation step called nobody (the unrouted alarm).", nil, nil)})
	return func(d time.Duration) { ack.Observe(d.Seconds()) }
}

// alertStateCollector counts alerts by state, and the unrouted ones, at each scrape:
// the database holds the truth for every process.
type alertStateCollector struct {
	store          *models.Store
	desc, unrouted *prometheus.Desc
}

func (c *alertStateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.unrouted }

func (c *alertStateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := alert.Of(c.store).AlertCounts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
	} else {
		for _, st := range alert.AlertStates {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[st]), st)
		}
	}
	n, err := alert.Of(c.store).CountUnroutedAlerts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.unrouted, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.unrouted, prometheus.GaugeValue, float64(n))
}
