// Package silence is what holds notices back for a while: silences, the matchers that
// say which messages they hold, the approval a broad one needs from a second person,
// their stages (awaiting, live, expired early, ended), and the held messages they keep
// until they end. Holds holds its queries; Keeper its audited changes. The messages
// themselves are the store's (models), which the silences build on.
package silence

import (
	"herald/duty"
	"herald/kernel"
	"herald/models"
)

// Holds is the silences' data, on the database of a message store (or its
// transaction).
type Holds struct {
	// k is the database, or the database bound to a transaction.
	k *kernel.DB
	// calendar is the duty calendar a recurring silence's days follow.
	calendar *duty.Schedule
}

// Of is the silences' store on the database of m, in its transaction when m is bound to
// one.
func Of(m *models.Store) *Holds { return &Holds{k: m.DB(), calendar: m.Duty()} }

// On is the store on tx, the database bound to a transaction (kernel.DB.InTx).
func (s *Holds) On(tx *kernel.DB) *Holds { return &Holds{k: tx, calendar: s.calendar} }
