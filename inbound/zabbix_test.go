package inbound

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The media type's script, its parameters and the body Herald reads agree: every
// parameter is one the script reads, every macro parameter one the script reads, and
// every field the script posts one normalizeZabbix reads.
func TestZabbixMediaTypeMatchesTheBody(t *testing.T) {
	read := map[string]bool{}
	for _, m := range regexp.MustCompile(`params\.(\w+)`).FindAllStringSubmatch(ZabbixScript, -1) {
		read[m[1]] = true
	}
	for _, p := range ZabbixParameters {
		if !read[p.Name] {
			t.Errorf("parameter %s: the script never reads it", p.Name)
		}
		delete(read, p.Name)
	}
	for name := range read {
		t.Errorf("the script reads params.%s, which is not a parameter", name)
	}

	var bodyFields []string
	typ := reflect.TypeFor[zabbixBody]()
	for i := range typ.NumField() {
		bodyFields = append(bodyFields, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
	}
	start := strings.Index(ZabbixScript, "var body = {")
	end := strings.Index(ZabbixScript[start:], "\n    };")
	if start < 0 || end < 0 {
		t.Fatal("the script builds no body")
	}
	posted := regexp.MustCompile(`(?m)^\s{8}(\w+):`).FindAllStringSubmatch(ZabbixScript[start:start+end], -1)
	if len(posted) < 10 {
		t.Fatalf("found only %d fields in the script's body", len(posted))
	}
	for _, m := range posted {
		if !slices.Contains(bodyFields, m[1]) {
			t.Errorf("the script posts %s, which Herald does not read", m[1])
		}
	}
}

// A severity is read from its number first, whatever names the administrator gave
// the levels, then from its name, Chinese frontend's included.
func TestZabbixSeverity(t *testing.T) {
	tests := []struct {
		nseverity, name, want string
	}{
		{"5", "灾难", SeverityCritical},
		{"4", "Renamed", SeverityCritical},
		{"3", "", SeverityWarning},
		{"2", "Warning", SeverityWarning},
		{"1", "", SeverityInfo},
		{"0", "Not classified", SeverityInfo},
		{"", "Disaster", SeverityCritical},
		{"", "High", SeverityCritical},
		{"", "Average", SeverityWarning},
		{"", "一般严重", SeverityWarning},
		{"", "Information", SeverityInfo},
		{"", "not classified", SeverityInfo},
		{"", "未分类", SeverityInfo},
		{"9", "Something else", SeverityWarning},
	}
	for _, tt := range tests {
		z := zabbixBody{NSeverity: zabbixText(tt.nseverity), Severity: zabbixText(tt.name)}
		if got := z.severity(); got != tt.want {
			t.Errorf("nseverity %q, severity %q: %s, want %s", tt.nseverity, tt.name, got, tt.want)
		}
	}
}
