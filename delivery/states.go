package delivery

import "herald/internal/states"

// Status is a message's delivery state.
type Status string

// The message states (DESIGN.md, "Message states").
const (
	Pending   Status = "pending"
	Sending   Status = "sending"
	Sent      Status = "sent"
	Failed    Status = "failed"
	Stopped   Status = "stopped"
	Cancelled Status = "cancelled"
	// Recalled is a sent message taken back on its platform (terminal).
	Recalled Status = "recalled"
	// Held is a message an active silence matched when it was due: no task carries it,
	// and it waits for every silence holding it to end (silences.go).
	Held Status = "held"
	// Digested is a notice folded into another message, its digest (terminal): the
	// message's digest_message_id names the one that carried it.
	Digested Status = "digested"
)

// Statuses lists the states in lifecycle order, for display.
var Statuses = []Status{Pending, Held, Sending, Failed, Sent, Stopped, Cancelled, Digested, Recalled}

// transitions are the moves a message may make, by the state it leaves. Every move is
// a compare-and-set in the store, conditioned on the states that may make it (From).
var transitions = map[Status][]Status{
	// Claimed by a worker, or cancelled by an operator or the API (a rejected approval
	// too), folded into a digest, or held by an active silence as its worker comes to
	// claim it.
	Pending: {Sending, Cancelled, Digested, Held},
	// Released when the last silence holding it ends, or cancelled (by a silence that
	// cancels what it held, or by a person).
	Held: {Pending, Cancelled},
	// The attempt's outcome: sent; failed with a retry due; stopped (attempts exhausted,
	// a permanent error, an ambiguous call); or given back pending without an attempt
	// used (limits, quiet hours, a stopping worker). A claim whose lease ran out goes
	// back to failed, or is taken over by another worker's claim as it stands.
	Sending: {Sent, Failed, Stopped, Pending},
	// Claimed again when the retry is due, or cancelled, or held by an active silence
	// when the retry comes due.
	Failed: {Sending, Cancelled, Held},
	// Sent again by an operator or the API.
	Stopped: {Pending},
	// Taken back on the platform within its recall window. A message not sent yet is
	// cancelled instead.
	Sent: {Recalled},
}

// table is the message lifecycle: Statuses in their order, with their transitions.
var table = states.New(Statuses, transitions)

// Allowed reports whether a message in state from may move to state to.
func Allowed(from, to Status) bool { return table.Allowed(from, to) }

// From lists the states a message may move to state to from, in lifecycle order: the
// list a compare-and-set update conditions on.
func From(to Status) []Status { return table.From(to) }

// The compare-and-set lists the store uses, named for the question.
var (
	// Claimable are the states a worker may claim a due message in.
	Claimable = From(Sending)
	// Waiting are the states of a message waiting for its task to claim it: the
	// sweeper looks for the tasks of these.
	Waiting = Claimable
	// Cancellable are the states an operator or the API may cancel a message in.
	Cancellable = From(Cancelled)
	// Recallable are the states a message may be recalled in.
	Recallable = From(Recalled)
	// Digestible are the states a notice waiting in a digest group may be folded in.
	Digestible = From(Digested)
	// Holdable are the states a silence may hold a due message in.
	Holdable = From(Held)
)

// Terminal reports whether no further move can happen but a deliberate resend.
func (s Status) Terminal() bool {
	return s == Sent || s == Stopped || s == Cancelled || s == Recalled || s == Digested
}
