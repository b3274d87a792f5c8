// Package linediff compares two texts line by line, for showing two versions of a
// template side by side: a longest common subsequence of their lines, the rest marked as
// removed from the left or added on the right.
package linediff

import "strings"

// Op says where a line of a diff comes from.
type Op int

// The kinds of line.
const (
	Same    Op = iota // in both texts
	Removed           // only in the left one
	Added             // only in the right one
)

// Row is one line of a side-by-side diff: a line in both texts (Same), one of the left's
// with no counterpart (Removed, Right empty), or one of the right's (Added, Left empty).
type Row struct {
	Op          Op
	Left, Right string
}

// maxCells bounds the table the comparison fills (lines of one text times lines of the
// other): templates are short, and a pathological pair is shown as wholly replaced
// rather than costing memory.
const maxCells = 4 << 20

// Lines compares a and b line by line.
func Lines(a, b string) []Row {
	return Diff(split(a), split(b))
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// Diff is the line diff of a and b: their longest common subsequence kept in order as
// Same rows, with each run of lines only one side has before the next common line,
// removals first.
func Diff(a, b []string) []Row {
	if len(a)*len(b) > maxCells {
		return replaced(a, b)
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []Row
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, Row{Op: Same, Left: a[i], Right: b[j]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, Row{Op: Removed, Left: a[i]})
			i++
		default:
			out = append(out, Row{Op: Added, Right: b[j]})
			j++
		}
	}
	return append(out, replaced(a[i:], b[j:])...)
}

// replaced is every line of a removed, then every line of b added.
func replaced(a, b []string) []Row {
	out := make([]Row, 0, len(a)+len(b))
	for _, l := range a {
		out = append(out, Row{Op: Removed, Left: l})
	}
	for _, l := range b {
		out = append(out, Row{Op: Added, Right: l})
	}
	return out
}
