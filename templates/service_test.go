package templates_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/kernel"
	"herald/templates"
)

// Saving a template turns every line break of its body and HTML into "\n", whoever
// sends it: a browser's "\r\n", an old Mac's lone "\r", or a mix. A subject is one
// line, with no break of any kind.
func TestCheckTemplateSavesLineFeeds(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"line feeds stay", "Overdue: {{.task}}\nPlease handle it.\n", "Overdue: {{.task}}\nPlease handle it.\n"},
		{"a browser's CRLF", "Overdue: {{.task}}\r\nPlease handle it.\r\n", "Overdue: {{.task}}\nPlease handle it.\n"},
		{"a lone CR", "Overdue: {{.task}}\rPlease handle it.", "Overdue: {{.task}}\nPlease handle it."},
		{"a blank line in CRLF", "a\r\n\r\nb", "a\n\nb"},
		{"CR CR LF is two breaks", "a\r\r\nb", "a\n\nb"},
		{"LF CR is two breaks", "a\n\rb", "a\n\nb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := templates.CheckTemplate(templates.TemplateInput{Name: "lf", MsgType: "text", Variables: []string{"task"},
				Subject: "Late", Body: tc.in, HTML: "<p>" + tc.in + "</p>"})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{tc.want, "<p>" + tc.want + "</p>"}
			if diff := cmp.Diff(want, []string{got.Body, got.HTML}); diff != "" {
				t.Errorf("body, HTML (-want +got):\n%s", diff)
			}
		})
	}
	for _, subject := range []string{"Late\r\nnow", "Late\rnow"} {
		_, err := templates.CheckTemplate(templates.TemplateInput{Name: "lf", MsgType: "text", Subject: subject, Body: "b"})
		if fe, ok := errors.AsType[*kernel.FieldError](err); !ok || fe.Field != "subject" {
			t.Errorf("subject %q: %v, want refused as the subject", subject, err)
		}
	}
}
