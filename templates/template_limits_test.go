package templates

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"herald/channels"
	"herald/directory"
	"herald/i18n"
	"herald/kernel"
)

// A render is held to the platform's cap as the platform counts it: Chinese text that
// reaches the cap exactly renders, one character more is refused whole (never cut), and
// the refusal reads in both languages.
func TestRenderCapWithChineseText(t *testing.T) {
	c, err := CompileTemplate(&Template{Name: "notice", MsgType: "text", Body: "{{.t}}", Variables: StringList{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	person := &directory.Recipient{Name: "张伟", ExternalID: "E1"}
	for _, platform := range []string{"wecom", "tianyuan", "email"} {
		limit := channels.Cap(platform)
		if limit.Unit != channels.Bytes {
			t.Fatalf("%s counts %s; this test builds text to a byte cap", platform, limit.Unit)
		}
		atCap := strings.Repeat("长", limit.Max/3) + strings.Repeat("a", limit.Max%3)
		_, body, err := c.Render(context.Background(), platform, map[string]string{"t": atCap}, person)
		if err != nil || body != atCap {
			t.Errorf("%s: Chinese text of exactly %d bytes: %v", platform, limit.Max, err)
		}
		_, body, err = c.Render(context.Background(), platform, map[string]string{"t": atCap + "长"}, person)
		fe := limitFailure(t, err)
		if fe == nil || body != "" {
			t.Fatalf("%s: one character past the cap: body of %d bytes (valid UTF-8 %t), error %v; want refused", platform, len(body), utf8.ValidString(body), err)
		}
		if en := fe.Message; !strings.Contains(en, "renders more than") || !strings.Contains(en, platform) {
			t.Errorf("%s: English message %q", platform, en)
		}
		if zh := fe.Text(i18n.Chinese); !strings.Contains(zh, "字节") {
			t.Errorf("%s: Chinese message %q", platform, zh)
		}
	}
	for _, m := range i18n.Missing() {
		if strings.Contains(m, "templates.") {
			t.Errorf("missing translation: %s", m)
		}
	}
}

// Every limit message of a template reads in Chinese, with its position where it has one.
func TestTemplateLimitMessagesInChinese(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{{range 3}}x{{end}}`, `{{template "x"}}`, `{{printf "%999d" 1}}`, `{{printf "%.*d" 1 2}}`} {
		_, err := CompileTemplate(&Template{Name: "bad", MsgType: "text", Body: body})
		fe := limitFailure(t, err)
		if fe == nil {
			continue
		}
		if en, zh := fe.Message, fe.Text(i18n.Chinese); !strings.HasPrefix(en, "line 1:") || !strings.HasPrefix(zh, "第 1 行第 ") {
			t.Errorf("%s: %q / %q, want both to name the position", body, en, zh)
		}
	}
}

// limitFailure returns err as the validation failure of a template limit, whose
// message is a templates.limit catalog key, or fails the test.
func limitFailure(t *testing.T, err error) *kernel.FieldError {
	t.Helper()
	var fe *kernel.FieldError
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.Key, "templates.limit.") {
		t.Errorf("error %v (%T), want a *kernel.FieldError with a templates.limit key", err, err)
		return nil
	}
	return fe
}
