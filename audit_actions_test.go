package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"herald/audit"
)

// auditedAction finds the action code a source line audits: the first argument of
// Audit, AuditDetail or an actor's Entry, an entry's Action field, or an action chosen
// into a variable named action.
var auditedAction = regexp.MustCompile(`(?:\.Audit|\.AuditDetail|\.Entry|Action:|action :?=)\(?\s*"([a-z_]+(?:\.[a-z_]+)+)"`)

// Every action the code records is in audit.Actions, the list the audit page's tests
// render in every language.
func TestEveryAuditedActionIsListed(t *testing.T) {
	t.Parallel()
	found := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "test" || d.Name() == "bench") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range auditedAction.FindAllStringSubmatch(string(src), -1) {
			found++
			if !slices.Contains(audit.Actions, m[1]) {
				t.Errorf("%s audits %q, which audit.Actions does not list", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 60 {
		t.Errorf("found %d audited actions in the code; the pattern no longer finds them", found)
	}
}
