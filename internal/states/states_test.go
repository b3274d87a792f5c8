package states

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A door: closed → open → closed, closed → locked → closed.
const (
	closed = "closed"
	open   = "open"
	locked = "locked"
)

var door = New([]string{closed, open, locked}, map[string][]string{
	closed: {open, locked},
	open:   {closed},
	locked: {closed},
})

func TestTable(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want []string
	}{
		{"from closed", door.From(closed), []string{open, locked}},
		{"from open", door.From(open), []string{closed}},
		{"from locked", door.From(locked), []string{closed}},
		{"to nowhere", door.From("ajar"), nil},
		{"states", door.States(), []string{closed, open, locked}},
	} {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	for _, tt := range []struct {
		from, to string
		want     bool
	}{
		{closed, open, true},
		{open, closed, true},
		{open, locked, false},
		{locked, open, false},
		{closed, closed, false},
	} {
		if got := door.Allowed(tt.from, tt.to); got != tt.want {
			t.Errorf("Allowed(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

// Named moves: two moves reach one state from different states, and From tells them
// apart.
func TestNamedMoves(t *testing.T) {
	type move string
	const push, slam move = "push", "slam"
	tbl := New([]string{closed, open, locked}, map[string][]move{
		closed: {push},
		open:   {slam},
		locked: {push},
	})
	if diff := cmp.Diff([]string{closed, locked}, tbl.From(push)); diff != "" {
		t.Errorf("push (-want +got):\n%s", diff)
	}
	if !tbl.Allowed(open, slam) || tbl.Allowed(closed, slam) {
		t.Error("only an open door is slammed")
	}
}

// A table is a literal: a state missing from its order is a mistake caught at start,
// and changing the slices it was built from changes nothing.
func TestNewChecksAndCopies(t *testing.T) {
	for _, tt := range []struct {
		name  string
		moves map[string][]string
	}{
		{"unknown from", map[string][]string{"ajar": {closed}}},
		{"unknown to", map[string][]string{closed: {"ajar"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("New did not panic")
				}
			}()
			New([]string{closed, open}, tt.moves)
		})
	}
	order, moves := []string{closed, open}, []string{open}
	tbl := New(order, map[string][]string{closed: moves})
	order[0], moves[0] = locked, locked
	if !tbl.Allowed(closed, open) || tbl.States()[0] != closed {
		t.Error("the table changed with the slices it was built from")
	}
	tbl.States()[0] = locked
	if !tbl.Allowed(closed, open) || tbl.States()[0] != closed {
		t.Error("the table changed with the slices it returned")
	}
}
