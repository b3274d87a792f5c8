package templates

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"herald/directory"
	"herald/kernel"
)

func TestCompileTemplate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tmpl  Template
		field string // "" means valid
	}{
		{"valid", Template{Name: "ok", MsgType: "text", Body: "Overdue: {{.task}}", Variables: StringList{"task"}}, ""},
		{"recipient fields are built in", Template{Name: "ok", MsgType: "markdown", Body: "Hi {{.recipient.name}}", Variables: nil}, ""},
		{"functions", Template{Name: "ok", MsgType: "text", Body: `{{upper .a}} {{default "none" .b}}`, Variables: StringList{"a", "b"}}, ""},
		{"undeclared variable", Template{Name: "x", MsgType: "text", Body: "{{.task}}"}, "body"},
		{"syntax error", Template{Name: "x", MsgType: "text", Body: "{{.task", Variables: StringList{"task"}}, "body"},
		{"unknown function", Template{Name: "x", MsgType: "text", Body: `{{exec "rm"}}`}, "body"},
		{"bad msg type", Template{Name: "x", MsgType: "html", Body: "hi"}, "msg_type"},
		{"bad variable name", Template{Name: "x", MsgType: "text", Body: "hi", Variables: StringList{"a-b"}}, "variables"},
		{"duplicate variable", Template{Name: "x", MsgType: "text", Body: "hi", Variables: StringList{"a", "a"}}, "variables"},
		{"empty body", Template{Name: "x", MsgType: "text", Body: "  "}, "body"},
		{"subject uses undeclared", Template{Name: "x", MsgType: "text", Subject: "{{.s}}", Body: "hi"}, "subject"},
		{"NUL in the body", Template{Name: "x", MsgType: "text", Body: "hi\x00"}, "body"},
		{"newline in the subject", Template{Name: "x", MsgType: "text", Subject: "a\nb", Body: "hi"}, "subject"},
		{"lines in the body", Template{Name: "ok", MsgType: "text", Body: "line one\r\n\tline two"}, ""},
		{"fields of a group", Template{Name: "ok", MsgType: "text", Body: "{{.labels.instance}} {{.labels.job}}", Variables: StringList{"labels.instance", "labels.job?"}}, ""},
		{"a group and a value of one name", Template{Name: "x", MsgType: "text", Body: "{{.labels}}", Variables: StringList{"labels", "labels.job"}}, "variables"},
		{"a field of the recipient", Template{Name: "x", MsgType: "text", Body: "hi", Variables: StringList{"recipient.name"}}, "variables"},
		{"a field of a field", Template{Name: "x", MsgType: "text", Body: "hi", Variables: StringList{"a.b.c"}}, "variables"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileTemplate(&tt.tmpl)
			var fe *kernel.FieldError
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
	t.Parallel()
	c, err := CompileTemplate(&Template{Name: "t", MsgType: "text", Subject: "About {{.task}}",
		Body: "Dear {{.recipient.name}}, {{.task}} is overdue", Variables: StringList{"task"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckVariables(map[string]string{}); err == nil || !strings.Contains(err.Error(), "variables.task") {
		t.Errorf("missing variable: %v, want an error naming variables.task", err)
	}
	if err := c.CheckVariables(map[string]string{"task": "x", "other": "y"}); err == nil || !strings.Contains(err.Error(), "variables.other") {
		t.Errorf("undeclared variable: %v, want an error naming variables.other", err)
	}
	subject, body, err := c.Render(context.Background(), "", map[string]string{"task": "Ledger 42"}, &directory.Recipient{Name: "Li Wei"})
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

// TestCompileTemplateRefusesRunaways: constructs that let a template burn CPU or memory
// on every send are refused when it is compiled (on save, preview and intake), naming
// the construct and the field.
func TestCompileTemplateRefusesRunaways(t *testing.T) {
	doubling := `{{$a := printf "%s%s" .t .t}}` + strings.Repeat(`{{$a = printf "%s%s" $a $a}}`, 20) + "{{len $a}}"
	tests := []struct {
		name, subject, body string
		field, message      string
	}{
		{"a range over a number printing megabytes", "", `{{range 20}}{{printf "%999999d" 0}}{{end}}`, "body", "line 1:8: range is not allowed"},
		{"nested ranges", "", `{{range 1000}}{{range 1000}}{{range 1000}}{{end}}{{end}}{{end}}`, "body", "range is not allowed"},
		{"a range over the recipient", "", `{{range .recipient}}{{.}}{{end}}`, "body", "range is not allowed"},
		{"a range hidden in a branch", "", "{{if .t}}ok\n{{else}}{{range 5}}x{{end}}{{end}}", "body", "line 2:16: range is not allowed"},
		{"a range in the subject", `{{range 3}}x{{end}}`, "hi", "subject", "range is not allowed"},
		{"a range in a definition", "", `{{define "x"}}{{range 3}}{{end}}{{end}}hi`, "body", "range is not allowed"},
		{"a recursive template", "", `{{define "x"}}{{template "x"}}{{end}}{{template "x"}}`, "body", "calling a template (template, block) is not allowed"},
		{"a block", "", `{{block "x" .}}hi{{end}}`, "body", "calling a template"},
		{"a wide printf", "", `{{printf "%999999d" 0}}`, "body", "printf width 999999 exceeds 100"},
		{"a wide printf after flags", "", `{{printf "%-0999s" .t}}`, "body", "printf width 999 exceeds 100"},
		{"a long precision", "", `{{printf "%.5000f" 1.5}}`, "body", "printf precision 5000 exceeds 100"},
		{"a huge width", "", `{{printf "%99999999999999999999d" 1}}`, "body", "printf width 99999999999999999999 exceeds 100"},
		{"a width from an argument", "", `{{printf "%*d" 999999 0}}`, "body", "printf width from an argument (*) is not allowed"},
		{"a precision from an argument", "", `{{printf "%[2].[1]*f" 999999 1.5}}`, "body", "printf precision from an argument (*) is not allowed"},
		{"a wide printf in a pipeline", "", `{{0 | printf "%500d" | upper}}`, "body", "printf width 500 exceeds 100"},
		{"a wide printf as an argument", "", `{{upper (printf "%500d" 0)}}`, "body", "printf width 500 exceeds 100"},
		{"a wide format from a variable", "", `{{$f := "%999999d"}}{{printf $f 0}}`, "body", "printf width 999999 exceeds 100"},
		{"a string doubled without writing", "", doubling, "body", "printf makes more than 262144 bytes, more than any platform accepts"},
		{"a huge source", "", strings.Repeat("x", maxTemplateSource+1), "body", "must be at most 65536 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileTemplate(&Template{Name: "x", MsgType: "text", Subject: tt.subject, Body: tt.body, Variables: StringList{"t"}})
			var fe *kernel.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Message, tt.message) {
				t.Errorf("error %v, want a FieldError on %s saying %q", err, tt.field, tt.message)
			}
		})
	}

	for _, body := range []string{`{{printf "%d%%" 50}}`, `{{printf "%-100s|%.2f|%[1]q" .t 1.5}}`, `{{printf "%5.1f" 2.25}} {{print .t 1}} {{html .t}}`} {
		if _, err := CompileTemplate(&Template{Name: "ok", MsgType: "text", Body: body, Variables: StringList{"t"}}); err != nil {
			t.Errorf("%s: %v, want it accepted", body, err)
		}
	}
}

// planted compiles a template the way one stored without Herald's checks would run if
// the checks at intake were missing too: it tests the render's own limits.
func planted(t *testing.T, body string) *Compiled {
	t.Helper()
	c := &Compiled{tmpl: &Template{Name: "planted", MsgType: "text"}}
	var err error
	if c.subject, err = c.parse("subject", ""); err != nil {
		t.Fatal(err)
	}
	if c.body, err = c.parse("body", body); err != nil {
		t.Fatal(err)
	}
	return c
}

// allocated runs f and returns how many bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRenderStopsAtTheCap: a render that would outgrow the platform's cap stops there,
// without building the rest (20 MB) in memory.
func TestRenderStopsAtTheCap(t *testing.T) {
	person := &directory.Recipient{Name: "Li Wei"}
	tests := []struct {
		name, body, platform, message string
	}{
		{"the 20 MB preview", `{{range 20}}{{printf "%999999d" 0}}{{end}}`, "", "printf width 999999 exceeds 100"},
		{"20 MB of narrow lines", `{{range 200000}}{{printf "%99d" 0}}{{end}}`, "tianyuan", "renders more than 4000 bytes; tianyuan accepts 4000"},
		{"20 MB of text", `{{range 2000000}}0123456789{{end}}`, "wecom", "renders more than 2048 bytes; wecom accepts 2048"},
		{"more than any platform", `{{range 2000000}}0123456789{{end}}`, "", "renders more than 262144 bytes, more than any platform accepts"},
		{"functions working without writing", strings.Repeat(`{{$x := upper .t}}`, 40), "tianyuan", "functions make more than 32000 bytes in one render"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := planted(t, tt.body)
			var err error
			n := allocated(func() {
				_, _, err = c.Render(context.Background(), tt.platform, map[string]string{"t": strings.Repeat("x", 1000)}, person)
			})
			var fe *kernel.FieldError
			if !errors.As(err, &fe) || fe.Field != "body" || fe.Message != tt.message {
				t.Errorf("error %v, want a FieldError on body saying %q", err, tt.message)
			}
			if n > 4<<20 {
				t.Errorf("the render allocated %d bytes, want it stopped near the cap", n)
			}
		})
	}
}

// TestRenderStopsAtTheDeadline: a render that writes nothing much but never ends is
// stopped by its deadline, and one whose caller gives up stops with the caller's error.
func TestRenderStopsAtTheDeadline(t *testing.T) {
	c := planted(t, `{{range 1000000000}}{{""}}{{end}}`)
	person := &directory.Recipient{Name: "Li Wei"}
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Render(context.Background(), "tianyuan", nil, person)
		done <- err
	}()
	var fe *kernel.FieldError
	select {
	case err := <-done:
		if !errors.As(err, &fe) || fe.Field != "body" || fe.Message != "takes longer than 100ms to render" {
			t.Errorf("error %v, want a FieldError on body saying it takes too long", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the render is still running after 10s")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := c.Render(ctx, "tianyuan", nil, person); !errors.Is(err, context.Canceled) || errors.As(err, &fe) {
		t.Errorf("render for a cancelled request: %v, want context.Canceled and no field error", err)
	}
}

// TestRenderKeepsNormalTemplatesExact: the limits leave an ordinary template, Chinese
// text and functions included, rendering exactly as before.
func TestRenderKeepsNormalTemplatesExact(t *testing.T) {
	t.Parallel()
	c, err := CompileTemplate(&Template{Name: "overdue", MsgType: "markdown", Subject: "【{{.system}}】任务逾期",
		Body:      "{{.recipient.name}}，您好：\n任务“{{.task}}”已逾期 {{.days}} 天，请于今日处理。{{if .note}}\n备注：{{.note}}{{end}}\n编号 {{upper .code}} {{printf \"%-6s|%5.1f\" .code 2.25}}",
		Variables: StringList{"system", "task", "days", "note", "code"}})
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"system": "总账", "task": "核对 42 号分类账", "days": "3", "note": "", "code": "gl-42"}
	subject, body, err := c.Render(context.Background(), "wecom", vars, &directory.Recipient{Name: "张伟"})
	if err != nil {
		t.Fatal(err)
	}
	want := "张伟，您好：\n任务“核对 42 号分类账”已逾期 3 天，请于今日处理。\n编号 GL-42 gl-42 |  2.2"
	if subject != "【总账】任务逾期" || body != want {
		t.Errorf("rendered %q / %q, want %q / %q", subject, body, "【总账】任务逾期", want)
	}
}

// TestCheckVariablesRefusesHugeValues: a value no message could hold is refused before
// any function works on it.
func TestCheckVariablesRefusesHugeValues(t *testing.T) {
	t.Parallel()
	c, err := CompileTemplate(&Template{Name: "t", MsgType: "text", Body: "{{.task}}", Variables: StringList{"task"}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckVariables(map[string]string{"task": strings.Repeat("x", MaxTextLen+1)})
	var fe *kernel.FieldError
	if !errors.As(err, &fe) || fe.Field != "variables.task" {
		t.Errorf("error %v, want a FieldError on variables.task", err)
	}
}

// A variable that is a field of a group renders as {{.group.field}}; one left out
// (optional) renders empty.
func TestRenderFieldsOfAGroup(t *testing.T) {
	t.Parallel()
	c, err := CompileTemplate(&Template{Name: "alert", MsgType: "text", Body: "{{.title}} on {{.labels.instance}}{{.labels.job}}",
		Variables: StringList{"title", "labels.instance", "labels.job?"}})
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"title": "CPU high", "labels.instance": "node1"}
	if err := c.CheckVariables(vars); err != nil {
		t.Fatal(err)
	}
	_, body, err := c.Render(context.Background(), "", vars, &directory.Recipient{Name: "李伟"})
	if err != nil || body != "CPU high on node1" {
		t.Errorf("body %q, %v", body, err)
	}
}
