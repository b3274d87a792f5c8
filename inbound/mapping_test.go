package inbound

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// A mapping is checked when its integration is saved, each failure naming its field.
func TestMappingCheck(t *testing.T) {
	if err := customMapping(t).Check(); err != nil {
		t.Fatalf("testdata/custom_mapping.json: %v", err)
	}
	fields := func(extra map[string]string) map[string]string {
		m := map[string]string{"title": "{{.name}}", "dedup_key": "{{.id}}", "severity": "{{.level}}"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name    string
		mapping Mapping
		want    refusal
	}{
		{"a field events do not have", Mapping{Fields: fields(map[string]string{"priority": "{{.p}}"})}, refusal{"mapping.priority", "inbound.mapping.field"}},
		{"no title", Mapping{Fields: map[string]string{"dedup_key": "{{.id}}"}}, refusal{"mapping.title", "inbound.mapping.required"}},
		{"a blank dedup key", Mapping{Fields: map[string]string{"title": "{{.name}}", "dedup_key": "  "}}, refusal{"mapping.dedup_key", "inbound.mapping.required"}},
		{"a template that does not compile", Mapping{Fields: fields(map[string]string{"description": "{{.detail"})}, refusal{"mapping.description", "inbound.mapping.template"}},
		{"a template too long", Mapping{Fields: fields(map[string]string{"description": strings.Repeat("x", maxTemplate+1)})}, refusal{"mapping.description", "inbound.mapping.too_long"}},
		{"range", Mapping{Fields: fields(map[string]string{"description": "{{range .items}}{{.}}{{end}}"})}, refusal{"mapping.description", "inbound.mapping.construct"}},
		{"range inside if", Mapping{Fields: fields(map[string]string{"description": "{{if .a}}{{with .b}}{{range .}}x{{end}}{{end}}{{end}}"})}, refusal{"mapping.description", "inbound.mapping.construct"}},
		{"printf", Mapping{Fields: fields(map[string]string{"title": `{{printf "%999999999d" 1}}`})}, refusal{"mapping.title", "inbound.mapping.construct"}},
		{"js in a pipeline", Mapping{Fields: fields(map[string]string{"title": `{{.name | js}}`})}, refusal{"mapping.title", "inbound.mapping.construct"}},
		{"a defined template", Mapping{Fields: fields(map[string]string{"title": `{{define "x"}}{{template "x"}}{{end}}{{.name}}`})}, refusal{"mapping.title", "inbound.mapping.construct"}},
		{"a value map for a field without one", Mapping{Fields: fields(nil), Values: map[string]map[string]string{"title": {"a": "b"}}}, refusal{"value_map.title", "inbound.value_map.field"}},
		{"a value map for a field not mapped", Mapping{Fields: fields(nil), Values: map[string]map[string]string{"status": {"OK": "resolved"}}}, refusal{"value_map.status", "inbound.value_map.unmapped"}},
		{"a severity Herald does not know", Mapping{Fields: fields(nil), Values: map[string]map[string]string{"severity": {"P1": "urgent"}}}, refusal{"value_map.severity", "inbound.value_map.target"}},
		{"a status mapped to a severity", Mapping{Fields: fields(map[string]string{"status": "{{.state}}"}), Values: map[string]map[string]string{"status": {"ALARM": "critical"}}}, refusal{"value_map.status", "inbound.value_map.target"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, refusalOf(t, tt.mapping.Check())); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("too many values to translate", func(t *testing.T) {
		words := map[string]string{}
		for i := range maxValueMapWords + 1 {
			words[strings.Repeat("P", i+1)] = SeverityCritical
		}
		m := Mapping{Fields: fields(nil), Values: map[string]map[string]string{"severity": words}}
		if diff := cmp.Diff(refusal{"value_map.severity", "inbound.value_map.too_many"}, refusalOf(t, m.Check())); diff != "" {
			t.Errorf("refusal (-want +got):\n%s", diff)
		}
	})
}

// The mapping's JSON is the integration's "mapping" and "value_map".
func TestMappingJSON(t *testing.T) {
	var m Mapping
	if err := json.Unmarshal([]byte(`{"mapping":{"title":"{{.a}}"},"value_map":{"severity":{"P1":"critical"}}}`), &m); err != nil {
		t.Fatal(err)
	}
	want := Mapping{Fields: map[string]string{"title": "{{.a}}"}, Values: map[string]map[string]string{"severity": {"P1": "critical"}}}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("mapping (-want +got):\n%s", diff)
	}
}

// A custom template reads the posted object as an operator expects: missing keys and
// nulls empty, nested objects as JSON, labels as pairs, a status mapped, links in
// each of their forms.
func TestCustomRendering(t *testing.T) {
	m := &Mapping{
		Fields: map[string]string{
			"title": "{{.check}} on {{.node.name}}", "dedup_key": "{{.node.name}}/{{.check}}",
			"status": "{{.state}}", "description": "[{{.missing}}|{{.gone}}|{{.node.gone.deeper}}|{{index .list 1}}]",
			"labels": "{{.pairs}}", "links": "{{.links}}",
		},
		Values: map[string]map[string]string{"status": {"ALARM": "firing", "CLEAR": "resolved"}},
	}
	body := `[
		{"check":"ping","node":{"name":"n1"},"state":"ALARM","gone":null,"list":["a","b"],"pairs":"env=prod, team = ops ,","links":"[{\"name\":\"Graph\",\"url\":\"https://g.example/1\"}]"},
		{"check":"ping","node":{"name":"n1"},"state":"CLEAR","list":["a","b"],"links":{"Graph":"https://g.example/1","Bad":"ftp://x"}},
		{"check":"ping","node":{"name":"n2"},"state":"recovered","list":[1,2.50],"links":"https://g.example/2"}
	]`
	got, err := Normalize(FormatCustom, []byte(body), m)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{DedupKey: "n1/ping", Status: StatusFiring, Severity: SeverityWarning, Title: "ping on n1", Description: "[|||b]",
			Labels: map[string]string{"env": "prod", "team": "ops"}, Links: []Link{{"Graph", "https://g.example/1"}}},
		{DedupKey: "n1/ping", Status: StatusResolved, Severity: SeverityWarning, Title: "ping on n1", Description: "[|||b]",
			Labels: map[string]string{}, Links: []Link{{"Graph", "https://g.example/1"}}},
		{DedupKey: "n2/ping", Status: StatusResolved, Severity: SeverityWarning, Title: "ping on n2", Description: "[|||2.50]",
			Labels: map[string]string{}, Links: []Link{{"Link", "https://g.example/2"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	_, err = Normalize(FormatCustom, []byte(`{"check":"ping","node":{"name":"n1"},"state":"FLAPPING","list":["a","b"]}`), m)
	if diff := cmp.Diff(refusal{"status", "inbound.status"}, refusalOf(t, err)); diff != "" {
		t.Errorf("a status neither mapped nor known (-want +got):\n%s", diff)
	}
	_, err = Normalize(FormatCustom, []byte(`{"check":"ping","node":{"name":"n1"},"list":[]}`), m)
	if diff := cmp.Diff(refusal{"description", "inbound.custom.render"}, refusalOf(t, err)); diff != "" {
		t.Errorf("an index past the end (-want +got):\n%s", diff)
	}
}

// A template cannot run away: what it writes stops at maxRendered, and what passes is
// cut to the field's cap, however large the posted values.
func TestCustomRenderIsBounded(t *testing.T) {
	m := &Mapping{Fields: map[string]string{
		"title": "{{.s}}{{.s}}{{.s}}", "dedup_key": "k", "description": strings.Repeat("{{.s}}", 50),
	}}
	huge := strings.Repeat("长", 100_000)
	body, _ := json.Marshal(map[string]string{"s": huge})

	tmpl, err := compileField("description", m.Fields["description"])
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := render(tmpl, templateData(map[string]any{"s": huge}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rendered) > maxRendered || len(rendered) < maxRendered-utf8.UTFMax || !utf8.ValidString(rendered) {
		t.Errorf("rendered %d bytes (valid UTF-8 %t), want just under %d", len(rendered), utf8.ValidString(rendered), maxRendered)
	}

	got, err := Normalize(FormatCustom, body, m)
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(got[0].Title); n != MaxTitle {
		t.Errorf("title of %d characters, want %d", n, MaxTitle)
	}
	if n := utf8.RuneCountInString(got[0].Description); n != MaxDescription {
		t.Errorf("description of %d characters, want %d", n, MaxDescription)
	}
}
