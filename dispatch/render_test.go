package dispatch

import (
	"errors"
	"strings"
	"testing"

	"herald/models"
)

func TestCompileTemplate(t *testing.T) {
	tests := []struct {
		name  string
		tmpl  models.Template
		field string // "" means valid
	}{
		{"valid", models.Template{Name: "ok", MsgType: "text", Body: "Overdue: {{.task}}", Variables: models.StringList{"task"}}, ""},
		{"recipient fields are built in", models.Template{Name: "ok", MsgType: "markdown", Body: "Hi {{.recipient.name}}", Variables: nil}, ""},
		{"functions", models.Template{Name: "ok", MsgType: "text", Body: `{{upper .a}} {{default "none" .b}}`, Variables: models.StringList{"a", "b"}}, ""},
		{"undeclared variable", models.Template{Name: "x", MsgType: "text", Body: "{{.task}}"}, "body"},
		{"syntax error", models.Template{Name: "x", MsgType: "text", Body: "{{.task", Variables: models.StringList{"task"}}, "body"},
		{"unknown function", models.Template{Name: "x", MsgType: "text", Body: `{{exec "rm"}}`}, "body"},
		{"bad msg type", models.Template{Name: "x", MsgType: "html", Body: "hi"}, "msg_type"},
		{"bad variable name", models.Template{Name: "x", MsgType: "text", Body: "hi", Variables: models.StringList{"a-b"}}, "variables"},
		{"duplicate variable", models.Template{Name: "x", MsgType: "text", Body: "hi", Variables: models.StringList{"a", "a"}}, "variables"},
		{"empty body", models.Template{Name: "x", MsgType: "text", Body: "  "}, "body"},
		{"subject uses undeclared", models.Template{Name: "x", MsgType: "text", Subject: "{{.s}}", Body: "hi"}, "subject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileTemplate(&tt.tmpl)
			var fe *models.FieldError
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.field != "" && !errors.As(err, &fe):
				t.Errorf("error %v, want a FieldError naming %s", err, tt.field)
			case tt.field != "" && fe.Field != tt.field:
				t.Errorf("error names %q, want %q (%v)", fe.Field, tt.field, err)
			}
		})
	}
}

func TestRenderNeverSaysNoValue(t *testing.T) {
	c, err := CompileTemplate(&models.Template{Name: "t", MsgType: "text", Subject: "About {{.task}}",
		Body: "Dear {{.recipient.name}}, {{.task}} is overdue", Variables: models.StringList{"task"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckVariables(map[string]string{}); err == nil || !strings.Contains(err.Error(), "variables.task") {
		t.Errorf("missing variable: %v, want an error naming variables.task", err)
	}
	if err := c.CheckVariables(map[string]string{"task": "x", "other": "y"}); err == nil || !strings.Contains(err.Error(), "variables.other") {
		t.Errorf("undeclared variable: %v, want an error naming variables.other", err)
	}
	subject, body, err := c.Render(map[string]string{"task": "Ledger 42"}, &models.Recipient{Name: "Li Wei"})
	if err != nil {
		t.Fatal(err)
	}
	if subject != "About Ledger 42" || body != "Dear Li Wei, Ledger 42 is overdue" {
		t.Errorf("rendered %q / %q", subject, body)
	}
	if strings.Contains(body, "<no value>") {
		t.Errorf("rendered text says <no value>: %q", body)
	}
}
