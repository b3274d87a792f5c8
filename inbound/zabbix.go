package inbound

import (
	_ "embed"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"time"

	"herald/kernel"
)

// ZabbixScript is the JavaScript of Herald's Zabbix webhook media type: it posts the
// body normalizeZabbix reads, turning Zabbix's dates into RFC 3339 on the way.
//
//go:embed zabbix_media_type.js
var ZabbixScript string

// ZabbixParameter is one parameter of the Zabbix webhook media type, as entered in
// Zabbix (Alerts → Media types → Parameters).
type ZabbixParameter struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ZabbixParameters are the media type's parameters: the integration's push URL and
// token, which the person setting it up fills in, then the Zabbix macros the script
// sends. {EVENT.ID} names the problem in its recovery's notification too, so a
// recovery resolves the problem it ends.
var ZabbixParameters = []ZabbixParameter{
	{"herald_url", "<HERALD_PUBLIC_URL>/api/v1/inbound/<integration>"},
	{"herald_token", "<token>"},
	{"event_id", "{EVENT.ID}"},
	{"event_value", "{EVENT.VALUE}"},
	{"event_nseverity", "{EVENT.NSEVERITY}"},
	{"severity", "{EVENT.SEVERITY}"},
	{"host", "{HOST.NAME}"},
	{"trigger_name", "{EVENT.NAME}"},
	{"trigger_description", "{TRIGGER.DESCRIPTION}"},
	{"message", "{ALERT.MESSAGE}"},
	{"event_tags", "{EVENT.TAGSJSON}"},
	{"event_date", "{EVENT.DATE}"},
	{"event_time", "{EVENT.TIME}"},
	{"recovery_date", "{EVENT.RECOVERY.DATE}"},
	{"recovery_time", "{EVENT.RECOVERY.TIME}"},
	{"trigger_id", "{TRIGGER.ID}"},
	{"url", "{TRIGGER.URL}"},
	{"zabbix_url", "{$ZABBIX.URL}"},
	{"http_proxy", ""},
}

// zabbixBody is what the media type posts. A person posting by hand may send
// numbers as numbers, a status word instead of event_value, tags as the string Zabbix
// makes of them, and Zabbix's own date and time instead of RFC 3339.
type zabbixBody struct {
	EventID            zabbixText      `json:"event_id"`
	EventValue         zabbixText      `json:"event_value"` // 1 a problem, 0 its recovery
	Status             zabbixText      `json:"status"`      // PROBLEM or RESOLVED, when event_value is not sent
	NSeverity          zabbixText      `json:"event_nseverity"`
	Severity           zabbixText      `json:"severity"`
	Host               zabbixText      `json:"host"`
	TriggerName        zabbixText      `json:"trigger_name"`
	TriggerDescription zabbixText      `json:"trigger_description"`
	Message            zabbixText      `json:"message"`
	EventTags          json.RawMessage `json:"event_tags"`
	EventDate          zabbixText      `json:"event_date"`
	EventTime          zabbixText      `json:"event_time"`
	RecoveryDate       zabbixText      `json:"recovery_date"`
	RecoveryTime       zabbixText      `json:"recovery_time"`
	URL                zabbixText      `json:"url"`
	EventURL           zabbixText      `json:"event_url"`
}

// zabbixText is a string, a number read as its text, or "" for a macro Zabbix left
// unexpanded ("{EVENT.RECOVERY.DATE}" in a problem's notification).
type zabbixText string

// unexpandedMacro is a Zabbix macro as written, which Zabbix passes on when it has no
// value for it.
var unexpandedMacro = regexp.MustCompile(`^\{[A-Z0-9_.$#]+\}$`)

// UnmarshalJSON implements json.Unmarshaler.
func (t *zabbixText) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		var n json.Number
		if json.Unmarshal(data, &n) != nil {
			return err
		}
		s = n.String()
	}
	if s = strings.TrimSpace(s); unexpandedMacro.MatchString(s) {
		s = ""
	}
	*t = zabbixText(s)
	return nil
}

// zabbixLevels are Zabbix's severities by number ({EVENT.NSEVERITY}), which holds
// whatever names an administrator gave them: 5 Disaster and 4 High are critical,
// 3 Average and 2 Warning warnings, 1 Information and 0 Not classified info.
var zabbixLevels = []string{SeverityInfo, SeverityInfo, SeverityWarning, SeverityWarning, SeverityCritical, SeverityCritical}

// zabbixZone is the zone a date and time in Zabbix's own form are read in: China
// Standard Time, which has no daylight saving. The media type's script sends RFC 3339,
// so this applies only to bodies written by hand.
var zabbixZone = time.FixedZone("UTC+8", 8*60*60)

// normalizeZabbix reads the media type's body: one event, its dedup key the event id.
func normalizeZabbix(body []byte) ([]Event, error) {
	return normalizeEach([]json.RawMessage{body}, []string{""}, "event_id", zabbixEvent)
}

// zabbixEvent reads one body of the media type.
func zabbixEvent(body json.RawMessage, _ string) (Event, error) {
	var z zabbixBody
	if err := decode(body, &z, ""); err != nil {
		return Event{}, err
	}
	status, err := z.status()
	if err != nil {
		return Event{}, err
	}
	title := string(z.TriggerName)
	if title == "" {
		return Event{}, kernel.Invalid("trigger_name", "inbound.zabbix.trigger_name")
	}
	labels, err := z.labels()
	if err != nil {
		return Event{}, err
	}
	startsAt, err := zabbixTime("event_time", z.EventDate, z.EventTime)
	if err != nil {
		return Event{}, err
	}
	endsAt, err := zabbixTime("recovery_time", z.RecoveryDate, z.RecoveryTime)
	if err != nil {
		return Event{}, err
	}
	return Event{
		DedupKey:    string(z.EventID),
		Status:      status,
		Severity:    z.severity(),
		Title:       title,
		Description: joinLines(string(z.TriggerDescription), string(z.Message)),
		Labels:      labels,
		Links:       []Link{{Name: "Zabbix", URL: string(z.EventURL)}, {Name: "Trigger", URL: string(z.URL)}},
		StartsAt:    startsAt,
		EndsAt:      endsAt,
	}, nil
}

// status is resolved for a recovery (event_value 0, or status RESOLVED or OK), firing
// for a problem and its updates.
func (z zabbixBody) status() (string, error) {
	switch z.EventValue {
	case "1":
		return StatusFiring, nil
	case "0":
		return StatusResolved, nil
	case "":
		if status, ok := statusOf(string(z.Status)); ok {
			return status, nil
		}
		if z.Status != "" {
			return "", kernel.Invalid("status", "inbound.status", "Value", z.Status, "Statuses", "PROBLEM, RESOLVED")
		}
	}
	return "", kernel.Invalid("event_value", "inbound.zabbix.event_value", "Value", z.EventValue)
}

// severity reads the level's number when it was sent, else its name.
func (z zabbixBody) severity() string {
	if n := z.NSeverity; len(n) == 1 && n[0] >= '0' && int(n[0]-'0') < len(zabbixLevels) {
		return zabbixLevels[n[0]-'0']
	}
	return severityOf(string(z.Severity))
}

// zabbixTag is one tag of {EVENT.TAGSJSON}.
type zabbixTag struct {
	Tag   string `json:"tag"`
	Value string `json:"value"`
}

// labels are the event's tags, a tag given twice with its values joined by commas,
// and the host, unless a tag is named host.
func (z zabbixBody) labels() (map[string]string, error) {
	var tags []zabbixTag
	raw := z.EventTags
	var asText zabbixText // the script sends an array; Zabbix's macro alone is a string
	if json.Unmarshal(raw, &asText) == nil {
		raw = json.RawMessage(asText)
	}
	if len(raw) > 0 && string(raw) != "null" {
		if err := decode(raw, &tags, "event_tags"); err != nil {
			return nil, err
		}
	}
	labels := map[string]string{}
	for _, t := range tags {
		if prev, ok := labels[t.Tag]; ok && !slices.Contains(strings.Split(prev, ","), t.Value) {
			t.Value = prev + "," + t.Value
		}
		labels[t.Tag] = t.Value
	}
	if _, ok := labels["host"]; !ok && z.Host != "" {
		labels["host"] = string(z.Host)
	}
	return labels, nil
}

// zabbixTime reads clock as RFC 3339, or date and clock in Zabbix's form
// ("2024.05.13", "10:15:30") in zabbixZone; neither sent is no time.
func zabbixTime(field string, date, clock zabbixText) (*time.Time, error) {
	if date == "" {
		return timeOf(field, string(clock))
	}
	t, err := time.ParseInLocation("2006.01.02 15:04:05", string(date+" "+clock), zabbixZone)
	if err != nil {
		return nil, kernel.Invalid(field, "inbound.time", "Value", string(date+" "+clock))
	}
	return &t, nil
}
