package handlers

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"herald/i18n"
)

// TestCheckDuplicateKeys compares the byte walk of well-formed documents with the walk
// through encoding/json's tokens, which reads any document the same way it always did.
func TestCheckDuplicateKeys(t *testing.T) {
	t.Parallel()
	many := func(dup bool) string {
		var b strings.Builder
		b.WriteString(`{"variables":{`)
		for i := range 40 {
			fmt.Fprintf(&b, `"v%d":"x",`, i)
		}
		if dup {
			b.WriteString(`"v39":"again",`)
		}
		b.WriteString(`"last":1}}`)
		return b.String()
	}
	for _, tc := range []struct {
		name, doc string
		want      string // the catalog message's id and arguments; "" when none
	}{
		{"plain", `{"platform":"sandbox","recipients":["E2001"],"content":{"text":"hi"}}`, ""},
		{"top-level duplicate", `{"platform":"sandbox","platform":"wecom"}`, `api.duplicate_key Key="platform"`},
		{"nested duplicate", `{"content":{"text":"a","subject":"s","text":"b"}}`, `api.duplicate_key Key="text"`},
		{"same key in sibling objects", `{"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}]}`, ""},
		{"key after a closed object", `{"a":{"b":1},"b":2,"a":3}`, `api.duplicate_key Key="a"`},
		{"duplicate after an array", `{"a":1,"b":[1,[2]],"a":3}`, `api.duplicate_key Key="a"`},
		{"keys after an array in a nested object", `{"x":{"p":1,"q":[{"p":1}],"r":2},"y":[]}`, ""},
		{"empty key twice", `[{"":0,"":0}]`, `api.duplicate_key Key=""`},
		{"value equal to a key", `{"a":"a","b":["a","b"],"c":"b"}`, ""},
		{"quotes and colons in values", `{"a":"x\",\"a\":\"y","b":"{\"a\":1}"}`, ""},
		{"escaped key equal to a plain one", `{"a":1,"\u0061":2}`, `api.duplicate_key Key="a"`},
		{"escaped keys that differ", `{"a\"b":1,"a\\b":2}`, ""},
		{"many keys", many(false), ""},
		{"many keys, one twice", many(true), `api.duplicate_key Key="v39"`},
		{"not an object", `["a","a"]`, ""},
		{"white space", " { \"a\" : 1 ,\n\t\"a\" : 2 } ", `api.duplicate_key Key="a"`},
		{"malformed", `{"a":1,}`, "api.malformed"},
		{"duplicate before malformed", `{"a":1,"a":2,}`, `api.duplicate_key Key="a"`},
		// The tokens end without an error; the decoding that follows reports it.
		{"cut short", `{"a":[1,2`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, slow := describe(checkDuplicateKeys([]byte(tc.doc))), describe(walkDuplicateKeys([]byte(tc.doc)))
			if diff := cmp.Diff(slow, got); diff != "" {
				t.Errorf("checkDuplicateKeys differs from the token walk (-walk +got):\n%s", diff)
			}
			if !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Errorf("checkDuplicateKeys(%s) = %q, want %q", tc.doc, got, tc.want)
			}
		})
	}
}

// describe writes a catalog message as its id and arguments; "" for none.
func describe(m *i18n.Msg) string {
	if m == nil {
		return ""
	}
	out := m.ID
	for i := 0; i+1 < len(m.Args); i += 2 {
		out += fmt.Sprintf(" %v=%v", m.Args[i], m.Args[i+1])
	}
	return out
}

// FuzzCheckDuplicateKeys holds the byte walk to the token walk on any document
// decodeJSON would check (valid UTF-8).
func FuzzCheckDuplicateKeys(f *testing.F) {
	for _, seed := range []string{
		`{"a":1,"b":[1,[2]],"a":3}`,
		`{"x":{"p":1,"q":[{"p":1}],"r":2},"y":[]}`,
		`{"a":{"b":1},"b":2,"a":3}`,
		`{"a\"b":1,"a\\b":2,"\u0061":3,"a":4}`,
		`[{"k":1},{"k":2,"k":3}]`,
		`{"a":1,}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !utf8.ValidString(doc) {
			return
		}
		got, want := describe(checkDuplicateKeys([]byte(doc))), describe(walkDuplicateKeys([]byte(doc)))
		if got != want {
			t.Errorf("checkDuplicateKeys(%q) = %q, the token walk says %q", doc, got, want)
		}
	})
}
