package main

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// sectionMark is the comment that names a README section: <!-- section: escalation -->.
var sectionMark = regexp.MustCompile(`(?m)^<!-- section: ([a-z0-9-]+) -->$`)

// developerSections are README's sections for developers and benchmarkers, which the
// Chinese README may leave to the English one.
var developerSections = []string{"architecture", "api", "benchmarks", "simulator"}

// readmeSections are the sections a README marks, in order.
func readmeSections(t *testing.T, path string) []string {
	t.Helper()
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range sectionMark.FindAllStringSubmatch(string(buf), -1) {
		out = append(out, m[1])
	}
	return out
}

// README.zh-CN covers every section of README an operator reads: a section README gains
// (marked <!-- section: name -->) fails this test until the Chinese one has it too, or
// it is named a developer's section above.
func TestChineseReadmeCoversEveryOperatorSection(t *testing.T) {
	t.Parallel()
	en, zh := readmeSections(t, "README.md"), readmeSections(t, "README.zh-CN.md")
	if len(en) < 20 {
		t.Fatalf("README marks %d sections; every heading of a section carries its mark", len(en))
	}
	for _, s := range en {
		if !slices.Contains(zh, s) && !slices.Contains(developerSections, s) {
			t.Errorf("README.zh-CN.md has no section %q (<!-- section: %s -->)", s, s)
		}
	}
	for _, s := range developerSections {
		if !slices.Contains(en, s) {
			t.Errorf("developer section %q is not in README.md any more: take it off the list", s)
		}
	}
}
