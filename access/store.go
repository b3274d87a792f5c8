// Package access is who may use Herald: console users, their passwords and sessions, the
// sign-in throttle, and the API keys with their limits, caches and status callbacks.
// Credentials holds its queries; Warden its changes, each audited in its own transaction.
package access

import (
	"context"

	"herald/audit"
	"herald/kernel"
)

// Credentials is the access domain's data: one per process (shared by the stores bound to a
// transaction), safe for concurrent use.
type Credentials struct {
	// k is the database, or the database bound to a transaction (On).
	k *kernel.DB
	// apiKeyCaches are the caches made on this store, for RevokeAPIKey to clear.
	apiKeyCaches *apiKeyCacheList
}

// NewStore is the access domain's data on k.
func NewStore(k *kernel.DB) *Credentials { return &Credentials{k: k, apiKeyCaches: &apiKeyCacheList{}} }

// On is the store on tx, the database bound to a transaction (kernel.DB.InTx); it shares
// the store's caches.
func (s *Credentials) On(tx *kernel.DB) *Credentials {
	bound := *s
	bound.k = tx
	return &bound
}

// InTx runs fn with a store whose every statement runs in one transaction.
func (s *Credentials) InTx(ctx context.Context, fn func(tx *Credentials) error) error {
	return s.k.InTx(ctx, func(k *kernel.DB) error { return fn(s.On(k)) })
}

// AuditLog is the audit log on the store's database, in its transaction when it is bound
// to one.
func (s *Credentials) AuditLog() *audit.Log { return audit.NewLog(s.k) }
