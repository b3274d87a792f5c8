// Package states holds the table of a state machine: what each state may do, from which
// follow the lists of states a compare-and-set update conditions on. Messages, alerts,
// approvals and silences each keep one such table beside their states.
package states

import (
	"fmt"
	"slices"
)

// Table is a state machine's moves, by the state that makes them. A move is the state
// moved to (M is S) or, where several moves reach one state from different states, a
// named move. Every move is a compare-and-set in the store, conditioned on the states
// that may make it (From): the table is the one place those lists are written.
type Table[S, M comparable] struct {
	order []S
	moves map[S][]M
}

// New builds a table over the states in order, the order From lists them in, from the
// moves each state may make. It panics when moves names a state order lacks: tables are
// literals built at start, and a misspelt state is a program error.
func New[S, M comparable](order []S, moves map[S][]M) *Table[S, M] {
	t := &Table[S, M]{order: slices.Clone(order), moves: make(map[S][]M, len(moves))}
	for from, list := range moves {
		if !slices.Contains(order, from) {
			panic(fmt.Sprintf("states: %v makes moves but is not a state of the table", from))
		}
		for _, m := range list {
			if to, isState := any(m).(S); isState && !slices.Contains(order, to) {
				panic(fmt.Sprintf("states: %v moves to %v, which is not a state of the table", from, to))
			}
		}
		t.moves[from] = slices.Clone(list)
	}
	return t
}

// Allowed reports whether something in state from may make move m.
func (t *Table[S, M]) Allowed(from S, m M) bool { return slices.Contains(t.moves[from], m) }

// From lists the states that may make move m, in the table's order: the list the
// compare-and-set of m conditions on.
func (t *Table[S, M]) From(m M) []S {
	var out []S
	for _, s := range t.order {
		if t.Allowed(s, m) {
			out = append(out, s)
		}
	}
	return out
}

// States lists the table's states in order.
func (t *Table[S, M]) States() []S { return slices.Clone(t.order) }

// Moves lists every move the table allows, as "from → move", by the table's states and
// then in the order moves gives: the lifecycle as its tests compare it with the one it
// documents.
func (t *Table[S, M]) Moves(moves []M) []string {
	var out []string
	for _, from := range t.order {
		for _, m := range moves {
			if t.Allowed(from, m) {
				out = append(out, fmt.Sprintf("%v → %v", from, m))
			}
		}
	}
	return out
}
