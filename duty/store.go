// Package duty is who is on duty: the weekly roster of head-office staff, rotations,
// one-day overrides and swaps, holidays and make-up workdays with the national calendar
// they come from, the duty rule's roster of a day, and the calendar feeds. Store holds
// its queries; Service its audited changes.
package duty

import (
	"herald/directory"
	"herald/kernel"
)

// Store is the duty data; safe for concurrent use.
type Store struct {
	// k is the database, or the database bound to a transaction (On).
	k *kernel.DB
	// people is the staff directory the roster names.
	people *directory.Store
}

// NewStore is the duty data on k; people is the directory on the same database.
func NewStore(k *kernel.DB, people *directory.Store) *Store { return &Store{k: k, people: people} }

// On is the store on tx, the database bound to a transaction (kernel.DB.InTx).
func (s *Store) On(tx *kernel.DB) *Store { return &Store{k: tx, people: s.people.On(tx)} }

// Directory is the staff directory, in the store's transaction when it is bound to one.
func (s *Store) Directory() *directory.Store { return s.people }
