// Package sending is the sending accounts: the platform account each message goes out
// through, its settings (credentials sealed at rest), its limits, retry adjustments and
// quiet hours, and the cache the intake and the workers read accounts through. AccountBook
// holds its queries; Desk its audited changes.
package sending

import (
	"herald/kernel"
)

// AccountBook is the sending accounts' data; safe for concurrent use.
type AccountBook struct {
	// k is the database, or the database bound to a transaction (On).
	k *kernel.DB
}

// NewStore is the sending accounts on k.
func NewStore(k *kernel.DB) *AccountBook { return &AccountBook{k: k} }

// On is the store on tx, the database bound to a transaction (kernel.DB.InTx).
func (s *AccountBook) On(tx *kernel.DB) *AccountBook { return &AccountBook{k: tx} }
