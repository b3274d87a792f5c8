// Package recall is taking sent messages back: the recall requests a large recall
// needs a second person's approval for, their lapse, what a recall did, and the
// queries that find and mark what it takes back. The messages themselves are the
// store's (models), which recalls build on.
package recall

import (
	"herald/kernel"
	"herald/models"
)

// Requests is the recalls' data, on the database of a message store (or its transaction).
type Requests struct {
	// k is the database, or the database bound to a transaction.
	k *kernel.DB
}

// Of is the recalls' store on the database of m, in its transaction when m is bound to
// one.
func Of(m *models.Store) *Requests { return &Requests{k: m.DB()} }
