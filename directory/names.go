package directory

import (
	"cmp"
	"slices"
	"strings"
	"unicode"

	"github.com/mozillazg/go-pinyin"
)

// People's names as the console orders and finds them. A Chinese name is spelled in
// pinyin for both, so 李娜, 王磊 and 张伟 sort as li, wang, zhang among Latin names, and
// "zw" (initials) or "zhangw" finds 张伟. Neither database has a pinyin collation, so
// this is done in Go on lists the console already holds.

// pinyinArgs spells a character without tones; a character without a reading is kept.
var pinyinArgs = pinyin.Args{Style: pinyin.Normal}

// surnameReadings are family names read otherwise than their character's first reading
// (曾 is céng in 曾经 but Zēng as a name); they apply to a name's first character.
var surnameReadings = map[rune]string{
	'曾': "zeng", '单': "shan", '解': "xie", '仇': "qiu", '区': "ou", '朴': "piao", '查': "zha",
	'覃': "qin", '翟': "zhai", '盖': "ge", '缪': "miao", '乐': "yue", '重': "chong", '种': "chong", '秘': "bi",
}

// NameSyllables splits a name into lower-case words: each Chinese character becomes its
// pinyin syllable, and each run of Latin letters or digits one word.
func NameSyllables(name string) []string {
	var (
		out  []string
		word []rune
	)
	flush := func() {
		if len(word) > 0 {
			out = append(out, string(word))
			word = word[:0]
		}
	}
	for _, r := range name {
		switch {
		case unicode.Is(unicode.Han, r):
			flush()
			if s, ok := surnameReadings[r]; ok && len(out) == 0 {
				out = append(out, s)
			} else if py := pinyin.SinglePinyin(r, pinyinArgs); len(py) > 0 && py[0] != "" {
				out = append(out, py[0])
			} else {
				out = append(out, string(r))
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word = append(word, unicode.ToLower(r))
		default:
			flush()
		}
	}
	flush()
	return out
}

// NameSortKey is the key a name sorts by: its words, pinyin for Chinese characters.
func NameSortKey(name string) string { return strings.Join(NameSyllables(name), " ") }

// NameInitials are the first letters of a name's words: "zw" for 张伟 and for Zhang Wei.
func NameInitials(name string) string {
	var b strings.Builder
	for _, s := range NameSyllables(name) {
		r := []rune(s)
		b.WriteRune(r[0])
	}
	return b.String()
}

// CompareNames orders two names by their sort keys, then as text.
func CompareNames(a, b string) int {
	return cmp.Or(strings.Compare(NameSortKey(a), NameSortKey(b)), strings.Compare(a, b))
}

// SortRecipientsByName sorts people by name (see CompareNames), then by id.
func SortRecipientsByName(people []Recipient) {
	keys := make(map[int64]string, len(people))
	for _, p := range people {
		keys[p.ID] = NameSortKey(p.Name)
	}
	slices.SortStableFunc(people, func(a, b Recipient) int {
		return cmp.Or(strings.Compare(keys[a.ID], keys[b.ID]), strings.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
}

// PersonMatches reports whether a search finds a person: the text, ignoring case, is
// part of the name, external id, branch or department; or, spelled in pinyin, it begins
// at a word of the name ("wei" or "zhangw" finds 张伟) or it begins the name's initials
// ("zw" finds 张伟). An empty search finds everyone.
func PersonMatches(p *Recipient, query string) bool {
	q := strings.ToLower(strings.TrimSpace(query))
	for _, field := range []string{p.ExternalID, p.Branch, p.Department} {
		if strings.Contains(strings.ToLower(field), q) {
			return true
		}
	}
	return NameMatches(p.Name, query)
}

// NameMatches reports whether a search finds a name: the text, ignoring case, is part
// of it; or, spelled in pinyin, it begins at a word of it ("wei" or "zhangw" finds 张伟)
// or it begins its initials ("zw" finds 张伟). An empty search finds every name.
func NameMatches(name, query string) bool {
	q := strings.ToLower(strings.TrimSpace(query))
	if q == "" || strings.Contains(strings.ToLower(name), q) {
		return true
	}
	compact := strings.Join(strings.Fields(q), "")
	words := NameSyllables(name)
	for i := range words {
		if strings.HasPrefix(strings.Join(words[i:], ""), compact) {
			return true
		}
	}
	return strings.HasPrefix(NameInitials(name), compact)
}

// FindPeople keeps the people a search finds (see PersonMatches), in their order.
func FindPeople(people []Recipient, query string) []Recipient {
	if strings.TrimSpace(query) == "" {
		return people
	}
	out := make([]Recipient, 0, len(people))
	for i := range people {
		if PersonMatches(&people[i], query) {
			out = append(out, people[i])
		}
	}
	return out
}
