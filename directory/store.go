// Package directory is the staff directory: the people Herald notifies (head office or
// branch, their addresses on each platform), their validation, search by name and
// pinyin, imports, and the intake's cache of them. Staff holds its queries; Clerk its
// audited changes.
package directory

import (
	"herald/kernel"
)

// Staff is the directory's data: one per process (shared by the stores bound to a
// transaction, which share its cache), safe for concurrent use.
type Staff struct {
	// k is the database, or the database bound to a transaction (On).
	k *kernel.DB
	// people caches the intake's lookups of recipients.
	people *recipientCache
}

// NewStore is the directory on k.
func NewStore(k *kernel.DB) *Staff { return &Staff{k: k, people: newRecipientCache(kernel.Now)} }

// On is the store on tx, the database bound to a transaction (kernel.DB.InTx); it shares
// the store's cache.
func (s *Staff) On(tx *kernel.DB) *Staff {
	bound := *s
	bound.k = tx
	return &bound
}
