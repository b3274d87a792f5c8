package templates

import (
	"context"
	"strings"
	"testing"

	"herald/directory"
	"herald/kernel"
)

// The HTML alternative renders with the same variables as the text, escaped: a value
// shows as text and cannot add markup; a bad HTML template is refused naming html.
func TestRenderHTML(t *testing.T) {
	t.Parallel()
	tmpl := &Template{Name: "overdue", MsgType: "text", Body: "Overdue: {{.task}}",
		HTML: `<p>Overdue: <b>{{.task}}</b> for {{.recipient.name}}</p>`, Variables: StringList{"task"}}
	c, err := CompileTemplate(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.RenderHTML(context.Background(), "email", map[string]string{"task": `<script>alert("x")</script> & co`},
		&directory.Recipient{Name: "张伟 <zw>"})
	want := `<p>Overdue: <b>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; co</b> for 张伟 &lt;zw&gt;</p>`
	if err != nil || got != want {
		t.Errorf("RenderHTML = %q, %v; want %q", got, err, want)
	}
	_, body, err := c.Render(context.Background(), "email", map[string]string{"task": "<b>"}, &directory.Recipient{})
	if err != nil || body != "Overdue: <b>" {
		t.Errorf("the text is not escaped: %q, %v", body, err)
	}
	plain, _ := CompileTemplate(&Template{Name: "plain", MsgType: "text", Body: "hi"})
	if html, err := plain.RenderHTML(context.Background(), "email", nil, &directory.Recipient{}); html != "" || err != nil || plain.HasHTML() {
		t.Errorf("a template without HTML rendered %q, %v", html, err)
	}
	for _, bad := range []string{`<p>{{.missing}}</p>`, `<p>{{if}}</p>`} {
		_, err := CompileTemplate(&Template{Name: "bad", MsgType: "text", Body: "x", HTML: bad})
		if fe, ok := err.(*kernel.FieldError); !ok || fe.Field != "html" {
			t.Errorf("HTML %q: %v, want an error naming html", bad, err)
		}
	}
}

// The HTML alternative escapes each value for where it lands: a javascript: link is
// neutralised, an unquoted attribute cannot be left for an event handler, and text in
// an attribute cannot close its quotes.
func TestRenderHTMLEscapesByContext(t *testing.T) {
	t.Parallel()
	tmpl := &Template{Name: "linked", MsgType: "text", Body: "See {{.link}}",
		HTML:      `<a href="{{.link}}">open</a> <img alt={{.note}} src="x.png"> <span title="{{.note}}">{{.note}}</span>`,
		Variables: StringList{"link", "note"}}
	c, err := CompileTemplate(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.RenderHTML(context.Background(), "email",
		map[string]string{"link": "javascript:alert(document.cookie)", "note": `x onerror=alert(1) "><script>alert(2)</script>`}, &directory.Recipient{})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"javascript:", "alt=x onerror", "<script>", `"><`} {
		if strings.Contains(got, bad) {
			t.Errorf("RenderHTML left %q in:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, `href="#ZgotmplZ"`) {
		t.Errorf("the javascript: link is not replaced:\n%s", got)
	}
	// A safe link goes through as it is.
	got, err = c.RenderHTML(context.Background(), "email", map[string]string{"link": "https://herald.example/m?id=1&x=2", "note": "ok"}, &directory.Recipient{})
	if err != nil || !strings.Contains(got, `href="https://herald.example/m?id=1&amp;x=2"`) {
		t.Errorf("a https link rendered as %q, %v", got, err)
	}
}
