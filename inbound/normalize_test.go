package inbound

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/kernel"
)

// The payloads under testdata/ are real ones:
//   - alertmanager_*.json follow the webhook body of Alertmanager's documentation
//     (https://prometheus.io/docs/alerting/latest/configuration/#webhook_config, which
//     gives its shape, version 4), filled in as Alertmanager fills it for the
//     kube-prometheus rule NodeFilesystemAlmostOutOfSpace;
//   - grafana_firing.json is the example of Grafana's documentation, as published
//     (https://grafana.com/docs/grafana/latest/alerting/configure-notifications/manage-contact-points/integrations/webhook-notifier/);
//   - zabbix_*.json are what zabbix_media_type.js posts for the Zabbix template
//     "Linux by Zabbix agent"'s CPU trigger and its recovery, and zabbix_by_hand.json a
//     body written by hand (numbers, Zabbix's dates, tags as Zabbix's JSON string);
//   - events_*.json and custom_*.json are Herald's own format and a custom mapping.

// readTestdata returns a file of testdata/.
func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// customMapping is testdata/custom_mapping.json.
func customMapping(t *testing.T) *Mapping {
	t.Helper()
	var m Mapping
	if err := json.Unmarshal(readTestdata(t, "custom_mapping.json"), &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// at parses an RFC 3339 time for a want.
func at(t *testing.T, s string) *time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return &v
}

func TestNormalizeRealPayloads(t *testing.T) {
	const (
		generator = "http://prometheus.ops.example:9090/graph?g0.expr=node_filesystem_avail_bytes%7Bjob%3D%22node%22%7D&g0.tab=1"
		runbook   = "https://runbooks.prometheus-operator.dev/runbooks/node/nodefilesystemalmostoutofspace"
		amURL     = "http://alertmanager.ops.example:9093"
	)
	nodeLabels := func(instance, severity string) map[string]string {
		l := map[string]string{"alertname": "NodeFilesystemAlmostOutOfSpace", "device": "/dev/sdb1", "instance": instance, "job": "node", "mountpoint": "/data"}
		if severity != "" {
			l["severity"] = severity
		}
		return l
	}
	zabbixLabels := map[string]string{"class": "os", "component": "cpu", "scope": "performance", "host": "core-db-01"}
	zabbixLink := []Link{{Name: "Zabbix", URL: "https://zabbix.ops.example/tr_events.php?triggerid=23456&eventid=10962"}}
	payLabels := map[string]string{"system": "payments", "env": "prod", "shard": "3"}

	tests := []struct {
		name, format, file string
		mapping            *Mapping
		want               []Event
	}{
		{
			// Three alerts of one group: the severity label read, a summary as the title or
			// else the alert's name, a firing alert's endsAt (its expiry) dropped, and a
			// javascript: generator URL left out.
			name: "Alertmanager firing", format: FormatAlertmanager, file: "alertmanager_firing.json",
			want: []Event{
				{
					DedupKey: "5f3c1b2a9d8e7f60", Status: StatusFiring, Severity: SeverityCritical,
					Title:       "Filesystem has less than 3% space left.",
					Description: "Filesystem on /dev/sdb1 at core-db-01:9100 has only 2.87% available space left.",
					Labels:      nodeLabels("core-db-01:9100", "critical"),
					Links:       []Link{{"Source", generator}, {"Runbook", runbook}, {"Alertmanager", amURL}},
					StartsAt:    at(t, "2026-05-13T02:11:45.123Z"),
				},
				{
					DedupKey: "8a41e07c3b5d2f19", Status: StatusFiring, Severity: SeverityWarning,
					Title:       "Filesystem has less than 5% space left.",
					Description: "Filesystem on /dev/sdb1 at core-db-02:9100 has only 4.51% available space left.",
					Labels:      nodeLabels("core-db-02:9100", "warning"),
					Links:       []Link{{"Source", generator}, {"Runbook", runbook}, {"Alertmanager", amURL}},
					StartsAt:    at(t, "2026-05-13T02:12:15.456Z"),
				},
				{
					DedupKey: "c2d9f4a0b7e63158", Status: StatusFiring, Severity: SeverityWarning,
					Title:    "NodeFilesystemAlmostOutOfSpace",
					Labels:   map[string]string{"alertname": "NodeFilesystemAlmostOutOfSpace", "device": "/dev/sdc1", "instance": "core-db-03:9100", "job": "node", "mountpoint": "/data"},
					Links:    []Link{{"Alertmanager", amURL}},
					StartsAt: at(t, "2026-05-13T02:13:00Z"),
				},
			},
		},
		{
			name: "Alertmanager resolved", format: FormatAlertmanager, file: "alertmanager_resolved.json",
			want: []Event{{
				DedupKey: "5f3c1b2a9d8e7f60", Status: StatusResolved, Severity: SeverityCritical,
				Title:    "Filesystem has less than 3% space left.",
				Labels:   nodeLabels("core-db-01:9100", "critical"),
				Links:    []Link{{"Source", generator}, {"Alertmanager", amURL}},
				StartsAt: at(t, "2026-05-13T02:11:45.123Z"),
				EndsAt:   at(t, "2026-05-13T02:41:45.123Z"),
			}},
		},
		{
			// Grafana's own version ("1") accepted, its values in the description, its
			// silence URL kept and its empty dashboard and panel URLs left out.
			name: "Grafana documentation example", format: FormatGrafana, file: "grafana_firing.json",
			want: []Event{
				{
					DedupKey: "c6eadffa33fcdf37", Status: StatusFiring, Severity: SeverityWarning,
					Title:       "This alert was triggered for zone us-1",
					Description: "The system has high memory usage\n\nB=44.23943737541908, C=1",
					Labels:      map[string]string{"alertname": "High memory usage", "team": "blue", "zone": "us-1"},
					Links: []Link{
						{"Source", "https://play.grafana.org/alerting/1afz29v7z/edit"},
						{"Runbook", "https://myrunbook.com/runbook/1234"},
						{"Silence", "https://play.grafana.org/alerting/silence/new?alertmanager=grafana&matchers=alertname%3DT2%2Cteam%3Dblue%2Czone%3Dus-1"},
						{"Grafana", "https://play.grafana.org/"},
					},
					StartsAt: at(t, "2021-10-12T09:51:03.157076+02:00"),
				},
				{
					DedupKey: "bc97ff14869b13e3", Status: StatusFiring, Severity: SeverityWarning,
					Title:       "This alert was triggered for zone eu-1",
					Description: "The system has high CPU usage\n\nB=44.23943737541908, C=1",
					Labels:      map[string]string{"alertname": "High CPU usage", "team": "blue", "zone": "eu-1"},
					Links: []Link{
						{"Source", "https://play.grafana.org/alerting/d1rdpdv7k/edit"},
						{"Runbook", "https://myrunbook.com/runbook/1234"},
						{"Silence", "https://play.grafana.org/alerting/silence/new?alertmanager=grafana&matchers=alertname%3DT1%2Cteam%3Dblue%2Czone%3Deu-1"},
						{"Grafana", "https://play.grafana.org/"},
					},
					StartsAt: at(t, "2021-10-12T09:56:03.157076+02:00"),
				},
			},
		},
		{
			name: "Zabbix problem", format: FormatZabbix, file: "zabbix_problem.json",
			want: []Event{{
				DedupKey: "10962", Status: StatusFiring, Severity: SeverityCritical,
				Title:       "Linux: High CPU utilization (over 90% for 5m)",
				Description: "CPU utilization is too high. The system might be slow to respond.\n\nProblem started at 10:15:30 on 2026.05.13\nProblem name: Linux: High CPU utilization (over 90% for 5m)\nHost: core-db-01\nSeverity: High\nOperational data: Current utilization: 97.3 %\nOriginal problem ID: 10962",
				Labels:      zabbixLabels,
				Links:       zabbixLink,
				StartsAt:    at(t, "2026-05-13T02:15:30Z"),
			}},
		},
		{
			// The recovery names the problem's event id, so it resolves the same alert.
			name: "Zabbix recovery", format: FormatZabbix, file: "zabbix_recovery.json",
			want: []Event{{
				DedupKey: "10962", Status: StatusResolved, Severity: SeverityCritical,
				Title:       "Linux: High CPU utilization (over 90% for 5m)",
				Description: "CPU utilization is too high. The system might be slow to respond.\n\nProblem has been resolved at 10:31:02 on 2026.05.13\nProblem name: Linux: High CPU utilization (over 90% for 5m)\nProblem duration: 15m 32s\nHost: core-db-01\nSeverity: High\nOriginal problem ID: 10962",
				Labels:      zabbixLabels,
				Links:       zabbixLink,
				StartsAt:    at(t, "2026-05-13T02:15:30Z"),
				EndsAt:      at(t, "2026-05-13T02:31:02Z"),
			}},
		},
		{
			// A number as the event id, PROBLEM as the status, Average as a warning, a tag
			// given twice joined, a host tag kept over the host, Zabbix's date read at
			// UTC+8, and the recovery macros Zabbix left unexpanded read as no time.
			name: "Zabbix body written by hand", format: FormatZabbix, file: "zabbix_by_hand.json",
			want: []Event{{
				DedupKey: "20417", Status: StatusFiring, Severity: SeverityWarning,
				Title:    "ESB gateway queue depth over 5000",
				Labels:   map[string]string{"service": "esb,payments", "host": "esb-gw-02.dc1"},
				Links:    []Link{{"Trigger", "https://wiki.ops.example/esb/queue-depth"}},
				StartsAt: at(t, "2026-05-13T15:05:00Z"),
			}},
		},
		{
			name: "events trigger", format: FormatEvents, file: "events_trigger.json",
			want: []Event{{
				DedupKey: "batch/end-of-day/2026-05-13", Status: StatusFiring, Severity: SeverityCritical,
				Title:       "日终批处理未在 02:00 前完成",
				Description: "Step 7 of 12 (interest accrual) has run for 95 minutes; it usually takes 20.",
				Labels:      map[string]string{"system": "core-banking", "job": "end-of-day"},
				Links:       []Link{{"Job log", "https://batch.ops.example/runs/2026-05-13"}},
			}},
		},
		{
			// An array: a resolve needs only its dedup key; a severity left out is a warning.
			name: "events resolve and trigger", format: FormatEvents, file: "events_resolve.json",
			want: []Event{
				{DedupKey: "batch/end-of-day/2026-05-13", Status: StatusResolved, Severity: SeverityWarning, Labels: map[string]string{}, Links: []Link{}},
				{DedupKey: "batch/statements/2026-05-13", Status: StatusFiring, Severity: SeverityWarning, Title: "Statement run waits for end of day", Labels: map[string]string{}, Links: []Link{}},
			},
		},
		{
			// P1 mapped to critical; "ok" in the severity's value map resolves; P5, which the
			// map does not name, read as a warning; a nested object as labels, a number in
			// it as its text; null and missing keys render empty.
			name: "custom mapping with a value map", format: FormatCustom, file: "custom_payload.json", mapping: customMapping(t),
			want: []Event{
				{
					DedupKey: "pay-gw-01::支付成功率低于 95%", Status: StatusFiring, Severity: SeverityCritical,
					Title: "支付成功率低于 95%", Description: "近 5 分钟支付成功率 91.2% (now 0.912)",
					Labels: payLabels, Links: []Link{{"Link", "https://monitor.ops.example/pay-gw-01"}},
				},
				{
					DedupKey: "pay-gw-01::支付成功率低于 95%", Status: StatusResolved, Severity: SeverityWarning,
					Title: "支付成功率低于 95%", Labels: payLabels, Links: []Link{},
				},
				{
					DedupKey: "atm-switch::ATM 通道心跳超时", Status: StatusFiring, Severity: SeverityWarning,
					Title: "ATM 通道心跳超时", Labels: map[string]string{}, Links: []Link{},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.format, readTestdata(t, tt.file), tt.mapping)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// refusal is a field error's field and catalog key.
type refusal struct{ Field, Key string }

// refusalOf returns err as a refusal, or fails the test.
func refusalOf(t *testing.T, err error) refusal {
	t.Helper()
	fe, ok := errors.AsType[*kernel.FieldError](err)
	if !ok {
		t.Fatalf("error %v (%T), want a *kernel.FieldError", err, err)
	}
	return refusal{fe.Field, fe.Key}
}

// manyObjects is a JSON array of n copies of object.
func manyObjects(object string, n int) []byte {
	b := []byte("[")
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, object...)
	}
	return append(b, ']')
}

// A body with a fault is refused whole, naming the field at fault by its JSON path.
func TestNormalizeRefusesNamingTheField(t *testing.T) {
	const alert = `{"status":"firing","labels":{"alertname":"A"},"fingerprint":"f"}`
	const trigger = `{"event_action":"trigger","dedup_key":"k","title":"t"}`
	tests := []struct {
		name, format string
		body         []byte
		mapping      *Mapping
		want         refusal
	}{
		{"the third alert without its fingerprint", FormatAlertmanager, readTestdata(t, "alertmanager_third_without_fingerprint.json"), nil, refusal{"alerts[2].fingerprint", "inbound.dedup_key.required"}},
		{"another webhook version", FormatAlertmanager, []byte(`{"version":"5","alerts":[` + alert + `]}`), nil, refusal{"version", "inbound.alertmanager.version"}},
		{"a body that is an array", FormatAlertmanager, []byte(`[` + alert + `]`), nil, refusal{"body", "inbound.type.object"}},
		{"no alerts", FormatAlertmanager, []byte(`{"version":"4","status":"firing"}`), nil, refusal{"alerts", "inbound.alertmanager.alerts"}},
		{"an alert's unknown status", FormatAlertmanager, []byte(`{"alerts":[` + alert + `,{"status":"pending","fingerprint":"g"}]}`), nil, refusal{"alerts[1].status", "inbound.status"}},
		{"a label that is not text", FormatAlertmanager, []byte(`{"alerts":[{"status":"firing","labels":{"a":1},"fingerprint":"f"}]}`), nil, refusal{"alerts[0].labels", "inbound.type.string"}},
		{"a start that is not a time", FormatAlertmanager, []byte(`{"alerts":[{"status":"firing","labels":{"alertname":"A"},"startsAt":"yesterday","fingerprint":"f"}]}`), nil, refusal{"alerts[0].startsAt", "inbound.time"}},
		{"1,001 alerts", FormatAlertmanager, []byte(`{"alerts":` + string(manyObjects(alert, MaxEvents+1)) + `}`), nil, refusal{"alerts[1000]", "inbound.too_many"}},
		{"a Grafana alert with nothing to title it", FormatGrafana, []byte(`{"alerts":[{"status":"firing","labels":{"team":"blue"},"fingerprint":"f"}]}`), nil, refusal{"alerts[0].labels.alertname", "inbound.alertmanager.title"}},
		{"a Zabbix event without its id", FormatZabbix, []byte(`{"event_value":"1","trigger_name":"Disk full"}`), nil, refusal{"event_id", "inbound.dedup_key.required"}},
		{"a Zabbix event neither problem nor recovery", FormatZabbix, []byte(`{"event_id":"1","event_value":"2","trigger_name":"Disk full"}`), nil, refusal{"event_value", "inbound.zabbix.event_value"}},
		{"a Zabbix status Herald cannot read", FormatZabbix, []byte(`{"event_id":"1","status":"MAYBE","trigger_name":"Disk full"}`), nil, refusal{"status", "inbound.status"}},
		{"a Zabbix event without its trigger's name", FormatZabbix, []byte(`{"event_id":"1","event_value":"1"}`), nil, refusal{"trigger_name", "inbound.zabbix.trigger_name"}},
		{"Zabbix tags that are not a list", FormatZabbix, []byte(`{"event_id":"1","event_value":"1","trigger_name":"Disk full","event_tags":{"a":"b"}}`), nil, refusal{"event_tags", "inbound.type.array"}},
		{"an unknown event action", FormatEvents, []byte(`{"event_action":"acknowledge","dedup_key":"k"}`), nil, refusal{"event_action", "inbound.events.action"}},
		{"the fourth event without a title", FormatEvents, []byte(`[` + trigger + `,` + trigger + `,` + trigger + `,{"event_action":"trigger","dedup_key":"k"}]`), nil, refusal{"[3].title", "inbound.events.title"}},
		{"a severity of another tool", FormatEvents, []byte(`{"event_action":"trigger","dedup_key":"k","title":"t","severity":"P1"}`), nil, refusal{"severity", "inbound.events.severity"}},
		{"a javascript link", FormatEvents, []byte(`{"event_action":"trigger","dedup_key":"k","title":"t","links":[{"name":"x","url":"javascript:alert(1)"}]}`), nil, refusal{"links[0].url", "inbound.events.link"}},
		{"a dedup key too long", FormatEvents, []byte(`{"event_action":"trigger","title":"t","dedup_key":"` + strings.Repeat("k", MaxDedupKey+1) + `"}`), nil, refusal{"dedup_key", "inbound.dedup_key.too_long"}},
		{"an array element that is not an object", FormatEvents, []byte(`[` + trigger + `,42]`), nil, refusal{"[1]", "inbound.type.object"}},
		{"1,001 events", FormatEvents, manyObjects(trigger, MaxEvents+1), nil, refusal{"[1000]", "inbound.too_many"}},
		{"a body that is a string", FormatEvents, []byte(`"trigger"`), nil, refusal{"body", "inbound.body_shape"}},
		{"a body that is not JSON", FormatEvents, []byte(`{"event_action":`), nil, refusal{"body", "inbound.json"}},
		{"1,001 custom objects", FormatCustom, manyObjects(`{"host":"h","alert_name":"a"}`, MaxEvents+1), customMapping(t), refusal{"[1000]", "inbound.too_many"}},
		{"a custom object rendering no title", FormatCustom, []byte(`[{"host":"h","alert_name":"a"},{"host":"h"}]`), customMapping(t), refusal{"[1].title", "inbound.custom.empty"}},
		{"custom labels that are not pairs", FormatCustom, []byte(`{"host":"h","alert_name":"a","tags":"env=prod,oops"}`), customMapping(t), refusal{"labels", "inbound.custom.labels"}},
		{"custom without its mapping", FormatCustom, []byte(`{}`), nil, refusal{"mapping", "inbound.mapping.missing"}},
		{"a custom mapping that fails its check", FormatCustom, []byte(`{}`), &Mapping{Fields: map[string]string{"title": "{{.a}}"}}, refusal{"mapping.dedup_key", "inbound.mapping.required"}},
		{"an unknown format", "nagios", []byte(`{}`), nil, refusal{"format", "inbound.format"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events, err := Normalize(tt.format, tt.body, tt.mapping)
			if err == nil {
				t.Fatalf("accepted, with %d events", len(events))
			}
			if diff := cmp.Diff(tt.want, refusalOf(t, err)); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			if events != nil {
				t.Errorf("a refused body returned %d events", len(events))
			}
		})
	}
}

// What a person reads is cut to its cap, on one line where it is shown on one;
// what identifies or routes an alert is refused past its bound.
func TestCaps(t *testing.T) {
	long := strings.Repeat
	body := func(title, description string, labels map[string]string) []byte {
		b, _ := json.Marshal(map[string]any{"event_action": "trigger", "dedup_key": " k ", "title": title, "description": description, "labels": labels})
		return b
	}
	t.Run("cut", func(t *testing.T) {
		got, err := Normalize(FormatEvents, body(" 第一行\n"+long("告", MaxTitle), long("述", MaxDescription+1), map[string]string{"note": long("x", MaxLabelValue+1)}), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := Event{
			DedupKey: "k", Status: StatusFiring, Severity: SeverityWarning,
			Title:       "第一行 " + long("告", MaxTitle-4),
			Description: long("述", MaxDescription),
			Labels:      map[string]string{"note": long("x", MaxLabelValue)},
			Links:       []Link{},
		}
		if diff := cmp.Diff([]Event{want}, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
	labels := map[string]string{}
	for i := range MaxLabels + 1 {
		labels[string(rune('a'+i%26))+long("z", i/26+1)] = "v"
	}
	refused := []struct {
		name   string
		labels map[string]string
		want   refusal
	}{
		{"too many labels", labels, refusal{"labels", "inbound.labels.too_many"}},
		{"a label's name too long", map[string]string{long("n", MaxLabelName+1): "v"}, refusal{"labels." + long("n", MaxLabelName+1), "inbound.labels.name_too_long"}},
		{"a label without a name", map[string]string{" ": "v"}, refusal{"labels", "inbound.labels.name_empty"}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Normalize(FormatEvents, body("t", "", tt.labels), nil)
			if diff := cmp.Diff(tt.want, refusalOf(t, err)); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("exactly the most labels", func(t *testing.T) {
		delete(labels, "a"+long("z", 1))
		if _, err := Normalize(FormatEvents, body("t", "", labels), nil); err != nil {
			t.Errorf("%d labels: %v", len(labels), err)
		}
	})
}
