package channels

import (
	"strings"
	"testing"
	"unicode/utf8"

	"herald/i18n"
)

// noMissingTranslations fails the test if a catalog lookup of this package failed.
func noMissingTranslations(t *testing.T) {
	t.Helper()
	for _, m := range i18n.Missing() {
		if strings.Contains(m, "channels.") || strings.HasPrefix(m, "untranslated ") {
			t.Errorf("missing translation: %s", m)
		}
	}
}

// atCap is Chinese text exactly at a cap: as many 长 (3 bytes, 1 character) as fit,
// topped up with ASCII to the last byte.
func atCap(c ContentCap) string {
	if c.Unit == Characters {
		return strings.Repeat("长", c.Max)
	}
	return strings.Repeat("长", c.Max/3) + strings.Repeat("a", c.Max%3)
}

// Every platform's cap counts what the platform counts, so Chinese text exactly at
// the cap passes and one character more does not; and text cut to a cap is cut
// between characters, never inside one.
func TestContentCapsWithChineseText(t *testing.T) {
	tests := []struct {
		platform string
		want     ContentCap
		// chinese is how many Chinese characters the cap holds.
		chinese int
	}{
		{"wecom", ContentCap{2048, Bytes}, 682},
		{"tianyuan", ContentCap{4000, Bytes}, 1333},
		{"zhaohu", ContentCap{4000, Bytes}, 1333},
		{"sandbox", ContentCap{4000, Bytes}, 1333},
		{"webhook", ContentCap{64 << 10, Bytes}, 21845},
		{"email", ContentCap{256 << 10, Bytes}, 87381},
		{"no such platform", ContentCap{4000, Bytes}, 1333},
		// No platform counts characters today; the unit is checked all the same.
		{"", ContentCap{10, Characters}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.platform, func(t *testing.T) {
			c := tt.want
			if tt.platform != "" {
				c = Cap(tt.platform)
			}
			if c != tt.want {
				t.Fatalf("Cap(%q) = %+v, want %+v", tt.platform, c, tt.want)
			}
			full := atCap(c)
			if !c.Fits(full) || c.Len(full) != c.Max {
				t.Errorf("text at the cap: length %d, fits %t; want %d and fits", c.Len(full), c.Fits(full), c.Max)
			}
			if n := utf8.RuneCountInString(strings.Repeat("长", tt.chinese)); !c.Fits(strings.Repeat("长", n)) || c.Fits(strings.Repeat("长", n+1)) {
				t.Errorf("the cap holds %d Chinese characters, want exactly %d", c.Len(strings.Repeat("长", n)), tt.chinese)
			}
			if over := full + "长"; c.Fits(over) {
				t.Errorf("one character past the cap fits")
			}
			if got := c.Truncate(full); got != full {
				t.Errorf("Truncate changed text within the cap")
			}
			for _, long := range []string{full + "长", strings.Repeat("长", c.Max+5), "ab" + strings.Repeat("长", c.Max)} {
				cut := c.Truncate(long)
				switch {
				case !utf8.ValidString(cut):
					t.Errorf("Truncate cut inside a character: invalid UTF-8 at the end %q", cut[max(0, len(cut)-8):])
				case !c.Fits(cut):
					t.Errorf("Truncate left %d, more than the cap %d", c.Len(cut), c.Max)
				case !strings.HasSuffix(cut, ellipsis) || !strings.HasPrefix(long, strings.TrimSuffix(cut, ellipsis)):
					t.Errorf("Truncate does not keep the start of the text and end with an ellipsis")
				case c.Len(cut) < c.Max-c.Len(ellipsis)-utf8.UTFMax:
					t.Errorf("Truncate left %d of %d: cut more than a character short", c.Len(cut), c.Max)
				}
			}
		})
	}
	if got, want := LargestCapBytes(), 256<<10; got != want {
		t.Errorf("LargestCapBytes = %d, want %d (email)", got, want)
	}
}

// WeCom puts the title into the content; with content at the cap, the two together
// are cut by Herald between characters, not by WeCom inside one.
func TestWeComBodyFitsTheCapWithTheTitle(t *testing.T) {
	c := Cap("wecom")
	for _, msgType := range []string{"text", "markdown"} {
		body := wecomBody(Message{To: "u1", MsgType: msgType, Title: "逾期提醒", Content: atCap(c)}, 1000002)
		content := ""
		if body.Text != nil {
			content = body.Text.Content
		} else {
			content = body.Markdown.Content
		}
		if !utf8.ValidString(content) || len(content) > c.Max || !strings.Contains(content, "逾期提醒") {
			t.Errorf("%s: content of %d bytes (valid UTF-8 %t), want at most %d with the title", msgType, len(content), utf8.ValidString(content), c.Max)
		}
	}
	m := Message{MsgType: "text", Title: "逾期提醒", Content: atCap(c)}
	if c.Fits(CountedContent("wecom", m)) || !Cap("tianyuan").Fits(CountedContent("tianyuan", Message{Title: "标题", Content: atCap(Cap("tianyuan"))})) {
		t.Errorf("CountedContent: WeCom must count the title with the content, other platforms the content alone")
	}
	short := wecomBody(Message{To: "u1", MsgType: "text", Title: "标题", Content: "正文"}, 1)
	if short.Text.Content != "标题\n\n正文" {
		t.Errorf("short message changed: %q", short.Text.Content)
	}
}

// excerpt, which quotes a provider's answer in errors and test reports, cuts between
// characters too.
func TestExcerptKeepsWholeCharacters(t *testing.T) {
	got := excerpt([]byte(strings.Repeat("错", 100)))
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || strings.Count(got, "错") != 66 {
		t.Errorf("excerpt = %q", got)
	}
}

// Every setting of every platform has a label, its help and option names, and its
// warnings in both languages.
func TestPlatformFieldsAreTranslated(t *testing.T) {
	for _, name := range Platforms {
		for _, f := range Fields(name) {
			if f.Label == "" {
				t.Errorf("%s %s has no label", name, f.Key)
			}
			notes := []Note{f.LabelNote(), f.HelpNote()}
			for _, o := range f.Options {
				notes = append(notes, f.OptionNote(o))
			}
			for _, w := range f.Warnings {
				notes = append(notes, note(w))
			}
			for _, n := range notes {
				if n.IsZero() {
					continue
				}
				if en, zh := n.In(i18n.English), n.In(i18n.Chinese); en == "" || zh == "" || en == zh {
					t.Errorf("%s %s: %q has English %q and Chinese %q", name, f.Key, n.Key, en, zh)
				}
			}
		}
	}
	noMissingTranslations(t)
}
