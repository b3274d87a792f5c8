// Package templates is what Herald says: message templates and their numbered versions,
// rendering them for a person (with the limits that keep a template from running away),
// and the size each platform takes. Library holds its queries.
package templates

import (
	"herald/kernel"
)

// Library is the templates' data; safe for concurrent use.
type Library struct {
	// k is the database, or the database bound to a transaction (On).
	k *kernel.DB
}

// NewStore is the templates on k.
func NewStore(k *kernel.DB) *Library { return &Library{k: k} }

// On is the store on tx, the database bound to a transaction (kernel.DB.InTx).
func (s *Library) On(tx *kernel.DB) *Library { return &Library{k: tx} }
