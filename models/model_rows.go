package models

import (
	"herald/kernel"
)

var (
	batchRows = kernel.NewModelRows[Batch]("batches")
)

// insertBatches writes new batches.
func insertBatches(w kernel.RowWriter, batches ...*Batch) error { return batchRows.Insert(w, batches) }
