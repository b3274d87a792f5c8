package delivery

import (
	"slices"
	"time"
)

// Priority is a message's priority: it picks the queue the message waits in, its place
// when the limiter has one call slot for several messages, and whether quiet hours
// hold it.
type Priority string

// The priorities.
const (
	High   Priority = "high"
	Normal Priority = "normal"
	Low    Priority = "low"
)

// Priorities lists the priorities, highest first.
var Priorities = []Priority{High, Normal, Low}

// Valid reports whether p is one of Priorities.
func (p Priority) Valid() bool { return slices.Contains(Priorities, p) }

// Rank orders priorities: 0 for high, 1 for normal, 2 for low (and anything else).
func (p Priority) Rank() int {
	switch p {
	case High:
		return 0
	case Normal:
		return 1
	}
	return 2
}

// Queue is the name of the queue a message of priority p waits in: the priority's own
// name; an unknown priority waits in normal's.
func (p Priority) Queue() string {
	if p.Valid() {
		return string(p)
	}
	return string(Normal)
}

// QueueWeights are the message queues and their weights: a worker with free slots takes
// from high six times, normal three times and low once as often.
var QueueWeights = map[string]int{string(High): 6, string(Normal): 3, string(Low): 1}

// QueueDepth is one message queue's contents right now, for the dashboard.
type QueueDepth struct {
	Name                              string
	Pending, Active, Scheduled, Retry int
	// Latency is how long the oldest pending task has waited.
	Latency time.Duration
}
