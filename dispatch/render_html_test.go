package dispatch

import (
	"context"
	"testing"

	"herald/models"
)

// The HTML alternative renders with the same variables as the text, escaped: a value
// shows as text and cannot add markup; a bad HTML template is refused naming html.
func TestRenderHTML(t *testing.T) {
	tmpl := &models.Template{Name: "overdue", MsgType: "text", Body: "Overdue: {{.task}}",
		HTML: `<p>Overdue: <b>{{.task}}</b> for {{.recipient.name}}</p>`, Variables: models.StringList{"task"}}
	c, err := CompileTemplate(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.RenderHTML(context.Background(), "email", map[string]string{"task": `<script>alert("x")</script> & co`},
		&models.Recipient{Name: "张伟 <zw>"})
	want := `<p>Overdue: <b>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; co</b> for 张伟 &lt;zw&gt;</p>`
	if err != nil || got != want {
		t.Errorf("RenderHTML = %q, %v; want %q", got, err, want)
	}
	_, body, err := c.Render(context.Background(), "email", map[string]string{"task": "<b>"}, &models.Recipient{})
	if err != nil || body != "Overdue: <b>" {
		t.Errorf("the text is not escaped: %q, %v", body, err)
	}
	plain, _ := CompileTemplate(&models.Template{Name: "plain", MsgType: "text", Body: "hi"})
	if html, err := plain.RenderHTML(context.Background(), "email", nil, &models.Recipient{}); html != "" || err != nil || plain.HasHTML() {
		t.Errorf("a template without HTML rendered %q, %v", html, err)
	}
	for _, bad := range []string{`<p>{{.missing}}</p>`, `<p>{{if}}</p>`} {
		_, err := CompileTemplate(&models.Template{Name: "bad", MsgType: "text", Body: "x", HTML: bad})
		if fe, ok := err.(*models.FieldError); !ok || fe.Field != "html" {
			t.Errorf("HTML %q: %v, want an error naming html", bad, err)
		}
	}
}
