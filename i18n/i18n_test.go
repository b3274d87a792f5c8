package i18n_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"herald/i18n"
)

// TestCatalogsHaveTheSameKeys: every key exists in both languages, so no page shows a
// key or falls back to English in Chinese.
func TestCatalogsHaveTheSameKeys(t *testing.T) {
	en := i18n.Keys(i18n.English)
	if len(en) < 50 {
		t.Fatalf("only %d English keys: the catalogs did not load", len(en))
	}
	for _, lang := range i18n.Languages {
		other := i18n.Keys(lang)
		for _, k := range en {
			if _, found := slices.BinarySearch(other, k); !found {
				t.Errorf("%s is missing from the %s catalog", k, lang)
			}
		}
		for _, k := range other {
			if _, found := slices.BinarySearch(en, k); !found {
				t.Errorf("%s is in the %s catalog only", k, lang)
			}
		}
	}
}

// TestEveryMessageRenders: each message's template runs with no data in both languages
// (a malformed template or a typo in a field name fails here, not on a page).
func TestEveryMessageRenders(t *testing.T) {
	i18n.ResetMissing()
	for _, lang := range i18n.Languages {
		for _, k := range i18n.Keys(lang) {
			if got := i18n.In(lang, k); got == "" || got == k {
				t.Errorf("%s %s renders as %q", lang, k, got)
			}
		}
	}
	if m := i18n.Missing(); len(m) > 0 {
		t.Errorf("lookups failed: %s", strings.Join(m, "; "))
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		candidates []string
		want       string
	}{
		{[]string{"en", "zh-CN,zh;q=0.9"}, "en"},
		{[]string{"", "zh-CN,zh;q=0.9,en;q=0.8"}, "zh-CN"},
		{[]string{"", "zh-TW"}, "zh-CN"},
		{[]string{"", "en-GB,en;q=0.9"}, "en"},
		{[]string{"", "fr-FR", "zh-CN"}, "zh-CN"},
		{[]string{"", "not a header;;"}, ""},
		{[]string{"xx"}, ""},
	}
	for _, tt := range tests {
		if got := i18n.Match(tt.candidates...); got != tt.want {
			t.Errorf("Match(%q) = %q, want %q", tt.candidates, got, tt.want)
		}
	}
}

func TestDatesInTheUsersLanguage(t *testing.T) {
	at := time.Date(2026, 11, 22, 14, 5, 9, 0, time.UTC)
	zh := i18n.WithLang(context.Background(), i18n.Chinese)
	if got, want := i18n.DateTime(zh, at), "2026年11月22日 星期日 14:05:09"; got != want {
		t.Errorf("zh-CN: %q, want %q", got, want)
	}
	en := i18n.WithLang(context.Background(), i18n.English)
	if got, want := i18n.DateTime(en, at), "Sun 22 Nov 2026 14:05:09"; got != want {
		t.Errorf("en: %q, want %q", got, want)
	}
}

func TestNameOfStoredValues(t *testing.T) {
	zh := i18n.WithLang(context.Background(), i18n.Chinese)
	if got := i18n.Name(zh, "status", "sent"); got != "已发送" {
		t.Errorf("status sent in zh-CN: %q", got)
	}
	if got := i18n.Name(zh, "status", "some_new_state"); got != "some new state" {
		t.Errorf("an unforeseen value: %q, want it readable as it is", got)
	}
}

// TestMissingSinceAMark: a test that keeps a mark sees the lookups that failed after it,
// each once, and not those before it; another test's reset does not take them away, and
// a mark survives the record forgetting its oldest half.
func TestMissingSinceAMark(t *testing.T) {
	i18n.In(i18n.Chinese, "test.missing.before")
	mark := i18n.MissingMark()
	i18n.In(i18n.Chinese, "test.missing.after")
	i18n.In(i18n.Chinese, "test.missing.after")
	i18n.ResetMissing()
	got := i18n.MissingSince(mark)
	if len(got) != 1 || !strings.HasPrefix(got[0], "zh-CN test.missing.after: ") {
		t.Fatalf("failed since the mark: %q, want test.missing.after once", got)
	}
	for i := range 5000 {
		i18n.NoteUntranslated("filler " + strconv.Itoa(i))
	}
	late := i18n.MissingMark()
	i18n.NoteUntranslated("the last")
	if got := i18n.MissingSince(late); !slices.Equal(got, []string{"untranslated the last: no catalog key"}) {
		t.Errorf("failed since a mark after the record was trimmed: %q", got)
	}
	if got := i18n.MissingSince(mark); len(got) == 0 || !slices.Contains(got, "untranslated the last: no catalog key") {
		t.Errorf("failed since a mark older than the record: %d lookups, want what the record still holds", len(got))
	}
}
