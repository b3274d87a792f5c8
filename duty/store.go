// Package duty is who is on duty: the weekly roster of head-office staff, rotations,
// one-day overrides and swaps, holidays and make-up workdays with the national calendar
// they come from, the duty rule's roster of a day, and the calendar feeds. Schedule holds
// its queries; Planner its audited changes.
package duty

import (
	"herald/directory"
	"herald/kernel"
)

// Schedule is the duty data; safe for concurrent use.
type Schedule struct {
	// k is the database, or the database bound to a transaction (On).
	k *kernel.DB
	// people is the staff directory the roster names.
	people *directory.Staff
}

// NewStore is the duty data on k; people is the directory on the same database.
func NewStore(k *kernel.DB, people *directory.Staff) *Schedule {
	return &Schedule{k: k, people: people}
}

// On is the store on tx, the database bound to a transaction (kernel.DB.InTx).
func (s *Schedule) On(tx *kernel.DB) *Schedule { return &Schedule{k: tx, people: s.people.On(tx)} }

// Directory is the staff directory, in the store's transaction when it is bound to one.
func (s *Schedule) Directory() *directory.Staff { return s.people }
