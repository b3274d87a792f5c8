package tasks_test

import (
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"herald/channels"
	"herald/internal/testenv"
	"herald/tasks"
)

// /metrics shows each email account's session pool: a relay that takes two connections
// shows as a ceiling of two, with messages that waited for a session; an account whose
// relay sets no limit shows none.
func TestMetricsShowSMTPPools(t *testing.T) {
	t.Parallel()
	senders := channels.NewRegistry(nil)
	t.Cleanup(senders.Close)
	limited, free := testenv.StartSMTPSink(t), testenv.StartSMTPSink(t)
	limited.LimitConnections(2)
	sendThrough(t, senders, 1, "mail-limited", limited, 40)
	sendThrough(t, senders, 2, "mail-free", free, 10)

	reg := prometheus.NewRegistry()
	tasks.NewMetrics(reg, senders)
	got := gather(t, reg)

	lim := got["mail-limited"]
	if lim["herald_smtp_session_limit"] != 2 {
		t.Errorf("limited account: ceiling %v, want 2 (the relay's limit)", lim["herald_smtp_session_limit"])
	}
	if open := lim["herald_smtp_sessions"]; open < 1 || open > 2 {
		t.Errorf("limited account: %v sessions open, want 1 or 2", open)
	}
	if lim["herald_smtp_session_waits_total"] < 1 {
		t.Errorf("limited account: %v waits, want the messages that waited for one of two sessions (40 from 8 senders)", lim["herald_smtp_session_waits_total"])
	}
	if opened := lim["herald_smtp_connections_opened_total"]; int(opened) != limited.Connections() {
		t.Errorf("limited account: %v connections opened, the relay saw %d", opened, limited.Connections())
	}

	fr := got["mail-free"]
	if fr["herald_smtp_session_limit"] != 0 || fr["herald_smtp_session_waits_total"] != 0 {
		t.Errorf("free account: ceiling %v and %v waits, want none", fr["herald_smtp_session_limit"], fr["herald_smtp_session_waits_total"])
	}
	if opened := fr["herald_smtp_connections_opened_total"]; opened < 1 || int(opened) != free.Connections() {
		t.Errorf("free account: %v connections opened, the relay saw %d", opened, free.Connections())
	}
}

// sendThrough sends n messages from 8 goroutines through the account's sender to sink.
func sendThrough(t *testing.T, senders *channels.Registry, id int64, name string, sink *testenv.SMTPSink, n int) {
	t.Helper()
	host, port, _ := net.SplitHostPort(sink.Addr)
	acct := channels.Account{ID: id, Name: name, Platform: "email", AllowPrivateNetwork: true, UpdatedAt: time.Now(),
		Config: map[string]string{"host": host, "port": port, "from": "herald@example.com", "tls": "none", "pool_size": "4"}}
	s, err := senders.Sender(acct)
	if err != nil {
		t.Fatal(err)
	}
	testenv.SendConcurrently(t, s, n)
	if sink.Messages() != n {
		t.Fatalf("%s: the relay took %d messages, want %d", name, sink.Messages(), n)
	}
}

// gather reads reg's figures by account, after checking the metrics keep Prometheus's
// naming rules.
func gather(t *testing.T, reg *prometheus.Registry) map[string]map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(families).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	out := map[string]map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "account" {
					continue
				}
				if out[l.GetValue()] == nil {
					out[l.GetValue()] = map[string]float64{}
				}
				v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
				out[l.GetValue()][f.GetName()] = v
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no figures by account gathered")
	}
	return out
}
