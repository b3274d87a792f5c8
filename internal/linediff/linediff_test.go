package linediff

import (
	"reflect"
	"testing"
)

func TestLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string
		want []Row
	}{
		{"equal", "x\ny", "x\ny\n", []Row{{Same, "x", "x"}, {Same, "y", "y"}}},
		{"both empty", "", "", nil},
		{"added at the end", "x", "x\ny", []Row{{Same, "x", "x"}, {Added, "", "y"}}},
		{"changed line", "a\nb\nc", "a\nB\nc", []Row{{Same, "a", "a"}, {Removed, "b", ""}, {Added, "", "B"}, {Same, "c", "c"}}},
		{"removed first", "a\nb", "b", []Row{{Removed, "a", ""}, {Same, "b", "b"}}},
		{"nothing in common", "a", "b", []Row{{Removed, "a", ""}, {Added, "", "b"}}},
		{"keeps the longest common run", "a\nb\nc\nd", "b\nc\na", []Row{{Removed, "a", ""}, {Same, "b", "b"}, {Same, "c", "c"}, {Removed, "d", ""}, {Added, "", "a"}}},
	} {
		if got := Lines(tc.a, tc.b); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Lines(%q, %q) = %v, want %v", tc.name, tc.a, tc.b, got, tc.want)
		}
	}
}
