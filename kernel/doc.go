// Package kernel is what every domain of Herald builds on: the database (DB: its
// connections, on SQLite a writer beside a pool of readers and a background
// checkpoint; its transactions, its start lock and its clock, Now), the query helpers
// every domain shares (multi-row inserts, JSON columns, escaped LIKE searches), the
// sealer of the credentials kept in it, the named refusals (DomainError, declared once
// and answered by one presenter), a field's validation failure (FieldError), the
// checks on text every domain shares, and the mapping of the database's errors onto
// those names.
package kernel
