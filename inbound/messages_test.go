package inbound

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"herald/i18n"
)

// Every catalog key the package refuses with reads in English and in Chinese: each
// "inbound." literal of its source is a key of both catalogs, and a literal ending in
// a dot is the prefix of the keys kindWord completes.
func TestMessagesInBothLanguages(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(lit.Value)
			if !strings.HasPrefix(s, "inbound.") {
				return true
			}
			if !strings.HasSuffix(s, ".") {
				keys = append(keys, s)
				return true
			}
			for _, kind := range []string{"string", "bool", "object", "array", "number"} {
				keys = append(keys, s+kind)
			}
			return true
		})
	}
	if len(keys) < 20 {
		t.Fatalf("found only %d keys in the source", len(keys))
	}
	for _, key := range keys {
		for _, lang := range i18n.Languages {
			if !i18n.Has(lang, key) {
				t.Errorf("%s is missing from the %s catalog", key, lang)
			}
		}
	}
}
