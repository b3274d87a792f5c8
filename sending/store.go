// Package sending is the sending accounts: the platform account each message goes out
// through, its settings (credentials sealed at rest), its limits, retry adjustments and
// quiet hours, and the cache the intake and the workers read accounts through. Store
// holds its queries; Service its audited changes.
package sending

import (
	"herald/kernel"
)

// Store is the sending accounts' data; safe for concurrent use.
type Store struct {
	// k is the database, or the database bound to a transaction (On).
	k *kernel.DB
}

// NewStore is the sending accounts on k.
func NewStore(k *kernel.DB) *Store { return &Store{k: k} }

// On is the store on tx, the database bound to a transaction (kernel.DB.InTx).
func (s *Store) On(tx *kernel.DB) *Store { return &Store{k: tx} }
