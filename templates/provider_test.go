package templates

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/channels"
	"herald/directory"
	"herald/kernel"
)

// A template's provider code and parameter mapping are checked as it is saved, each
// problem naming its field; a good one renders the parameters in order.
func TestProviderTemplateMapping(t *testing.T) {
	base := TemplateInput{Name: "disk-full", Body: "【Herald】{{.host}} 磁盘已满，级别 {{.level}}", Variables: []string{"host", "level"}}
	cases := []struct {
		name   string
		code   string
		params []string
		field  string
	}{
		{"params without a code", "", []string{"host={{.host}}"}, "provider_template"},
		{"a code with a space", "SMS 1", nil, "provider_template"},
		{"a variable the template lacks", "SMS_1", []string{"host={{.host}}", "level={{.level}}", "zone={{.zone}}"}, "provider_params[2]"},
		{"a parameter left unmapped", "SMS_1", []string{"host={{.host}}", "level="}, "provider_params[1]"},
		{"no name", "SMS_1", []string{"={{.host}}"}, "provider_params[0]"},
		{"a parameter twice", "SMS_1", []string{"host={{.host}}", "host={{.level}}"}, "provider_params[1]"},
		{"an expression that does not parse", "SMS_1", []string{"host={{.host"}, "provider_params[0]"},
	}
	for _, tc := range cases {
		in := base
		in.ProviderTemplate, in.ProviderParams = tc.code, tc.params
		_, err := CheckTemplate(in)
		fe, ok := errors.AsType[*kernel.FieldError](err)
		if !ok || fe.Field != tc.field {
			t.Errorf("%s: %v, want a problem with %s", tc.name, err, tc.field)
		}
	}
	in := base
	in.ProviderTemplate, in.ProviderParams = "SMS_1", []string{"host={{.host}}", "level={{.level | upper}}"}
	tmpl, err := CheckTemplate(in)
	if err != nil {
		t.Fatal(err)
	}
	c, err := CompileTemplate(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.RenderParams(context.Background(), "sms", map[string]string{"host": "db-1", "level": "high"}, &directory.Recipient{Name: "Li"})
	if err != nil {
		t.Fatal(err)
	}
	want := []channels.Param{{Name: "host", Value: "db-1"}, {Name: "level", Value: "HIGH"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
	if c.ProviderTemplate() != "SMS_1" {
		t.Errorf("code = %q", c.ProviderTemplate())
	}
}
