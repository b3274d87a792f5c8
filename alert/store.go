// Package alert is an alert's life: escalation policies and their steps, the alert a
// send with an acknowledgment opens, its state (open, acknowledged, resolved,
// exhausted) and the steps taken, who acknowledged it and how. The messages that carry
// its notices are the store's (models), which alerts build on.
package alert

import (
	"herald/kernel"
	"herald/models"
)

// Ledger is the alerts' data, on the database of a message store (or its transaction).
type Ledger struct {
	// k is the database, or the database bound to a transaction.
	k *kernel.DB
}

// Of is the alerts' store on the database of m, in its transaction when m is bound to
// one.
func Of(m *models.Store) *Ledger { return &Ledger{k: m.DB()} }
