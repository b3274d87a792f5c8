package models

import (
	"herald/kernel"
)

var (
	batchRows = kernel.NewModelRows[Batch]("batches")
	auditRows = kernel.NewModelRows[AuditEntry]("audit_log")
)

// insertBatches writes new batches.
func insertBatches(w kernel.RowWriter, batches ...*Batch) error { return batchRows.Insert(w, batches) }

// insertAudit writes audit entries, each at now when it has no time, with its values cut
// to their columns and any URL's credentials and query left out (see Redact).
func insertAudit(w kernel.RowWriter, entries ...*AuditEntry) error {
	now := kernel.Now()
	for _, e := range entries {
		if e.At.IsZero() {
			e.At = now
		}
		e.cut()
	}
	return auditRows.Insert(w, entries)
}
