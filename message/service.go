// Package message is the messages' service: a batch's or a message's reading as a
// caller may see it, and the changes an operator makes to messages once they exist
// (cancel, retry, re-send the stopped, a whole batch at once). Their rows, claims and
// lists are the store's (models).
package message

import (
	"context"

	"herald/alert"
	"herald/audit"
	"herald/models"
)

// Operator reads and changes messages; each change is validated, then written with its
// audit entries in one transaction (audit.Run), its effects after the commit.
type Operator struct {
	store *models.Store
	queue Queue
	// kicker wakes a key's callbacks; nil: the recovery pass finds them.
	kicker alert.Kicker
	// stats counts cancelled messages for the dashboard; nil counts nothing.
	stats *models.Stats
}

// Queue hands messages made due again to the workers, after the change commits.
type Queue interface {
	Retried(ctx context.Context, msgs []models.Message)
}

// NewService builds the messages' service on store; queue takes retried messages,
// kicker (may be nil) wakes callbacks, stats (may be nil) counts cancellations.
func NewService(store *models.Store, queue Queue, kicker alert.Kicker, stats *models.Stats) *Operator {
	return &Operator{store: store, queue: queue, kicker: kicker, stats: stats}
}

// change runs fn with a store bound to one transaction and writes the audit entries fn
// recorded in it (audit.Run).
func (d *Operator) change(ctx context.Context, by audit.Actor, fn func(tx *models.Store, ch *audit.Change) error) error {
	return audit.RunOn(ctx, d.store.DB(), by, d.store.On, fn)
}
